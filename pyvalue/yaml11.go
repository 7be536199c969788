package pyvalue

import (
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ResolveYAML11 rewrites the plain (unquoted, untagged) scalars of a parsed
// YAML tree to the types PyYAML's yaml.load gives them, which is how the
// Python CLI read flow files and yakonfig read config files. yaml.v3
// follows YAML 1.2, which differs: `yes`, `no`, `on`, `off` (any case
// PyYAML knows) are booleans in PyYAML and strings in YAML 1.2; `1e3` is a
// string in PyYAML (a float needs a dot) and a float in 1.2; `1:30` is the
// sexagesimal integer 90 in PyYAML; `0755` is octal in PyYAML. Timestamps
// and merge keys are left to the decoder. Quoted or explicitly tagged
// scalars are not touched.
func ResolveYAML11(n *yaml.Node) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode, yaml.MappingNode:
		for _, c := range n.Content {
			ResolveYAML11(c)
		}
	case yaml.ScalarNode:
		if n.Style != 0 {
			return // quoted, literal, folded or explicitly tagged
		}
		resolveScalar11(n)
	}
}

// PyYAML's implicit resolvers in the order it tries them (yaml/resolver.py).
const (
	re11Bool      = 0
	re11Float     = 1
	re11Int       = 2
	re11Merge     = 3
	re11Null      = 4
	re11Timestamp = 5
	re11Value     = 6
)

func resolveScalar11(n *yaml.Node) {
	v := n.Value
	switch {
	case implicitTypes[re11Bool].MatchString(v):
		n.Tag = "!!bool"
		switch v[0] {
		case 'y', 'Y', 't', 'T':
			n.Value = "true"
		case 'o', 'O':
			if strings.EqualFold(v, "on") {
				n.Value = "true"
			} else {
				n.Value = "false"
			}
		default:
			n.Value = "false"
		}
	case implicitTypes[re11Int].MatchString(v):
		if i, ok := yaml11Int(v); ok {
			n.Tag, n.Value = "!!int", i
		}
	case implicitTypes[re11Float].MatchString(v):
		if f, ok := yaml11Float(v); ok {
			n.Tag, n.Value = "!!float", f
		}
	case implicitTypes[re11Merge].MatchString(v), implicitTypes[re11Timestamp].MatchString(v):
		// the decoder's merge and timestamp handling stands
	case implicitTypes[re11Null].MatchString(v):
		n.Tag = "!!null"
	default:
		n.Tag = "!!str"
	}
}

// yaml11Int is PyYAML's construct_yaml_int, as decimal text.
func yaml11Int(v string) (string, bool) {
	v = strings.ReplaceAll(v, "_", "")
	neg := false
	switch {
	case strings.HasPrefix(v, "-"):
		neg, v = true, v[1:]
	case strings.HasPrefix(v, "+"):
		v = v[1:]
	}
	var u uint64
	var err error
	switch {
	case v == "0":
	case strings.HasPrefix(v, "0b"):
		u, err = strconv.ParseUint(v[2:], 2, 64)
	case strings.HasPrefix(v, "0x"):
		u, err = strconv.ParseUint(v[2:], 16, 64)
	case strings.HasPrefix(v, "0"):
		u, err = strconv.ParseUint(v[1:], 8, 64)
	case strings.Contains(v, ":"):
		for _, part := range strings.Split(v, ":") {
			d, perr := strconv.ParseUint(part, 10, 64)
			if perr != nil || u > (math.MaxUint64-d)/60 {
				return "", false
			}
			u = u*60 + d
		}
	default:
		u, err = strconv.ParseUint(v, 10, 64)
	}
	if err != nil {
		return "", false // beyond 64 bits: left to the decoder
	}
	s := strconv.FormatUint(u, 10)
	if neg && u != 0 {
		s = "-" + s
	}
	return s, true
}

// yaml11Float is PyYAML's construct_yaml_float, as text yaml.v3 reads.
func yaml11Float(v string) (string, bool) {
	v = strings.ToLower(strings.ReplaceAll(v, "_", ""))
	sign := 1.0
	switch {
	case strings.HasPrefix(v, "-"):
		sign, v = -1, v[1:]
	case strings.HasPrefix(v, "+"):
		v = v[1:]
	}
	var f float64
	switch {
	case v == ".inf":
		f = math.Inf(1)
	case v == ".nan":
		return ".nan", true
	case strings.Contains(v, ":"):
		for _, part := range strings.Split(v, ":") {
			d, err := strconv.ParseFloat(part, 64)
			if err != nil {
				return "", false
			}
			f = f*60 + d
		}
	default:
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil {
			return "", false
		}
	}
	f *= sign
	switch {
	case math.IsInf(f, 1):
		return ".inf", true
	case math.IsInf(f, -1):
		return "-.inf", true
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s, true
}
