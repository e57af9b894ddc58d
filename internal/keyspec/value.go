package keyspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// ErrUnsupportedValue is returned by AddValue for a value that has no
// JSON form (a channel, a function, a cyclic structure).
var ErrUnsupportedValue = errors.New("keyspec: value cannot be encoded")

// AddValue adds a Go value that came from outside the wire format: a JWT
// claim (go-zero decodes numbers as json.Number), or whatever a service's
// own auth put in a context. Strings, numbers of every Go type and booleans
// are added by kind with numbers canonical, so a claim of 42 and a context
// value int64(42) agree; anything else goes through its JSON form. It
// reports false, adding nothing, for nil and the empty string, which count
// as missing.
func (hs *Hasher) AddValue(v any) (bool, error) {
	switch v := v.(type) {
	case nil:
		return false, nil
	case string:
		if v == "" {
			return false, nil
		}
		hs.AddString(String, v)
		return true, nil
	case []byte:
		if len(v) == 0 {
			return false, nil
		}
		hs.Add(Bytes, v)
		return true, nil
	case json.Number, bool, map[string]any, []any:
		return true, hs.AddJSON(v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true, hs.AddJSON(json.Number(fmt.Sprint(v)))
	case float32:
		return true, hs.AddJSON(json.Number(strconv.FormatFloat(float64(v), 'g', -1, 32)))
	case float64:
		return true, hs.AddJSON(json.Number(strconv.FormatFloat(v, 'g', -1, 64)))
	case fmt.Stringer:
		return hs.AddValue(v.String())
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrUnsupportedValue, err)
	}
	var norm any
	if err := DecodeJSON(b, &norm); err != nil {
		return false, fmt.Errorf("%w: %v", ErrUnsupportedValue, err)
	}
	return hs.AddValue(norm)
}

// HostOnly drops the port of a host:port address, so that one client's
// connections share a key; other addresses are returned as they are.
func HostOnly(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
