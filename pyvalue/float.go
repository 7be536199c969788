package pyvalue

import (
	"math"
	"strconv"
	"strings"
)

// Float formats a float the way Python 2 repr() does: shortest
// round-trip digits, positional notation for decimal exponents -4..15 (with
// ".0" when integral), exponent notation otherwise (two-digit exponent).
func Float(f float64) string { return formatFloat(f, -1, 16) }

// FloatStr formats a float the way Python 2 str() (and format() with an
// empty spec) does: 12 significant digits, positional notation for
// decimal exponents -4..10 (with ".0" when integral), exponent notation
// otherwise (two-digit exponent): str(1e11) is "1e+11", str(1/3.0)
// "0.333333333333".
func FloatStr(f float64) string { return formatFloat(f, 12, 11) }

// formatFloat is Python 2's float formatting, which repr() and str()
// share: f rounded to digits significant digits (-1: the fewest that read
// back as f), without trailing zeros; positional when the decimal
// exponent is at least -4 and below expLimit, with ".0" when integral;
// otherwise d.ddde+XX. inf, -inf and nan as Python prints them.
func formatFloat(f float64, digits, expLimit int) string {
	if s, ok := nonFinite(f); ok {
		return s
	}
	prec := -1
	if digits > 0 {
		prec = digits - 1
	}
	e := strconv.FormatFloat(f, 'e', prec, 64)
	at := strings.IndexByte(e, 'e')
	exp, err := strconv.Atoi(e[at+1:])
	if err != nil || exp < -4 || exp >= expLimit {
		mant := e[:at]
		if strings.IndexByte(mant, '.') >= 0 {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		return mant + e[at:]
	}
	// The rounded value, printed positionally with the digits it needs.
	v, _ := strconv.ParseFloat(e, 64)
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// nonFinite is how Python 2 prints an infinity or NaN (repr and str
// alike); ok is false for a finite f.
func nonFinite(f float64) (string, bool) {
	switch {
	case math.IsInf(f, 1):
		return "inf", true
	case math.IsInf(f, -1):
		return "-inf", true
	case math.IsNaN(f):
		return "nan", true
	}
	return "", false
}
