package jobserver

import (
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyvalue"
)

// pyReprName renders a name the way Python 2 repr() shows it: a byte string
// as 'x' and a text string as u'x'. In-band messages such as
// "no such work_spec 'NAME'" embed it.
func pyReprName(n coordinate.Name) string {
	if n.Text {
		return pyvalue.ReprUnicode(n.Bytes)
	}
	return pyvalue.ReprBytes(n.Bytes)
}

// The rest of Python 2's repr() lives in package pyvalue.
