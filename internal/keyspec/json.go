package keyspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ErrNotNumber is returned by CanonicalNumber for text that is not a JSON
// number.
var ErrNotNumber = errors.New("keyspec: not a number")

// DecodeJSON decodes exactly one JSON value from data, numbers as
// json.Number; trailing data after the value is an error.
func DecodeJSON(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// LookupJSON follows path through a value decoded with json.Decoder's
// UseNumber: a segment names an object member, or, on an array, an index.
// It reports false when the path does not lead to a value or leads to null.
func LookupJSON(root any, path []string) (any, bool) {
	cur := root
	for _, seg := range path {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, cur != nil
}

// AddJSON adds a decoded JSON value: strings, numbers (canonical: 1, 1.0
// and 1e0 are one number) and booleans by kind, objects and arrays as
// canonical JSON (members sorted, numbers canonical).
func (hs *Hasher) AddJSON(v any) error {
	switch v := v.(type) {
	case string:
		hs.AddString(String, v)
	case json.Number:
		n, err := CanonicalNumber(string(v))
		if err != nil {
			return err
		}
		hs.AddString(Number, n)
	case bool:
		hs.AddString(Bool, strconv.FormatBool(v))
	case nil:
		hs.Add(Null, nil)
	default:
		var buf bytes.Buffer
		if err := writeCanonical(&buf, v); err != nil {
			return err
		}
		hs.Add(JSON, buf.Bytes())
	}
	return nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, v[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case string:
		writeString(buf, v)
	case json.Number:
		n, err := CanonicalNumber(string(v))
		if err != nil {
			return err
		}
		buf.WriteString(n)
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case nil:
		buf.WriteString("null")
	default:
		return errors.New("keyspec: not a decoded JSON value")
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}

// CanonicalNumber returns one spelling for every spelling of a JSON
// number's value: D "e" E, meaning D x 10^E, where D is the digits without
// leading or trailing zeros (with a leading '-' when negative) and E is an
// integer; zero is "0". So 100, 1e2 and 100.0 are all "1e2", and 0.10 is
// "1e-1". It works on the text alone, exactly and in linear time (no
// 1e999999999 can make it compute a huge number), and returns ErrNotNumber
// for text that is not a JSON number or whose exponent overflows.
func CanonicalNumber(s string) (string, error) {
	if !isJSONNumber(s) {
		return "", ErrNotNumber
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, expText, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	var exp int64
	if expText != "" {
		var err error
		if exp, err = strconv.ParseInt(expText, 10, 64); err != nil {
			return "", ErrNotNumber
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0", nil
	}
	trimmed := strings.TrimRight(digits, "0")
	shift := int64(len(digits)-len(trimmed)) - int64(len(frac))
	if (shift > 0 && exp > math.MaxInt64-shift) || (shift < 0 && exp < math.MinInt64-shift) {
		return "", ErrNotNumber
	}
	exp += shift
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(trimmed)
	b.WriteByte('e')
	b.WriteString(strconv.FormatInt(exp, 10))
	return b.String(), nil
}

// isJSONNumber checks the JSON number grammar, which is stricter than
// strconv's (no "+1", ".5", "0x1", "Inf", "NaN").
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}
