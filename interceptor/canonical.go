package interceptor

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// The canonical encoding of a message is a stream of keyspec tokens: each
// is a kind, a length and bytes, so the stream splits into tokens one way
// only. Beside keyspec's value kinds it uses these structural ones, which
// bracket messages and count lists and maps, so that values of different
// shapes (["ab"] and ["a","b"], a field of the message and the same field
// of a nested one) never share an encoding.
const (
	kindMessage keyspec.Kind = '{' // opens a message; no bytes
	kindEnd     keyspec.Kind = '}' // closes a message; no bytes
	kindField   keyspec.Kind = 'f' // a field number, 4 bytes big-endian, then the field's value
	kindList    keyspec.Kind = '[' // a repeated field's length, 8 bytes big-endian, then its elements
	kindMap     keyspec.Kind = 'm' // a map field's length, 8 bytes big-endian, then key and value of each entry
)

// Tokens for the floats that have no number form. Every NaN (any sign,
// any payload) is one token. keyspec.CanonicalNumber never produces these
// texts, so they collide with no finite number.
const (
	textNaN    = "NaN"
	textPosInf = "+Inf"
	textNegInf = "-Inf"
)

// addCanonical adds the canonical encoding of m: its fields, never its raw
// bytes. Two messages that a handler cannot tell apart through the
// generated getters hash alike:
//
//   - unknown fields are ignored at every level (the handler never sees
//     them), and the request is never modified;
//   - populated fields are visited in field-number order, then any set
//     extensions in number order; list elements in order; map entries
//     sorted by key;
//   - a field with explicit presence (proto3 optional, proto2 optional,
//     extensions) set to its default value, and a message field set to a
//     message that encodes to nothing, count as unset;
//   - scalars are encoded by kind as a key field's are (numbers of every
//     width canonical, so int32 7, uint64 7 and double 7.0 agree; enums by
//     number), except that NaN, +Inf and -Inf, which a key field refuses,
//     are one token each here, so that a message carrying them still hashes.
//
// Members of a real oneof are the exception to the defaults rule: one set
// to its default, or to an empty message, is encoded, because which member
// is set is what the handler switches on (an empty message is the usual
// way to pick a choice that carries no data).
//
// Treating a set default as unset errs toward the same key: at worst two
// requests that a handler could tell apart through HasX are refused as
// duplicates (a false Aborted the client can see), where erring the other
// way would let a real duplicate through unnoticed.
//
// It allocates once per call, for its stack of open messages, and nothing
// per scalar or message field; lists and maps cost what protoreflect's
// reflection over them costs (a wrapper per field, about one allocation
// per element of a scalar list and two per map entry) plus a slice to sort
// a map's entries.
func addCanonical(hs *keyspec.Hasher, m protoreflect.Message) {
	var stack [8]protoreflect.FieldNumber
	w := canonicalWriter{hs: hs, pending: stack[:0]}
	w.messageValue(m)
}

// addCanonicalField adds m as the value of a key field: like addCanonical,
// but a message that encodes to nothing counts as missing, as an unset
// field does.
func addCanonicalField(hs *keyspec.Hasher, m protoreflect.Message) error {
	var stack [8]protoreflect.FieldNumber
	w := canonicalWriter{hs: hs, pending: append(stack[:0], 0)}
	w.fields(m)
	if len(w.pending) == 1 {
		return errMissing
	}
	hs.Add(kindEnd, nil)
	return nil
}

// canonicalWriter writes the encoding of one message. A message field is
// opened lazily: its number and kindMessage wait in pending until one of
// its own fields is written, so that a message that encodes to nothing
// leaves no trace, exactly as if it were unset.
type canonicalWriter struct {
	hs *keyspec.Hasher
	// pending are the opened messages not yet written, outermost first:
	// a field number, or 0 for a message that is not a field's value.
	pending []protoreflect.FieldNumber
}

// flush writes the pending openings, before a token of the innermost one.
func (w *canonicalWriter) flush() {
	for _, num := range w.pending {
		if num != 0 {
			w.fieldNumber(num)
		}
		w.hs.Add(kindMessage, nil)
	}
	w.pending = w.pending[:0]
}

func (w *canonicalWriter) fieldNumber(num protoreflect.FieldNumber) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(num))
	w.hs.AddString(kindField, string(b[:]))
}

func (w *canonicalWriter) length(kind keyspec.Kind, n int) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	w.hs.AddString(kind, string(b[:]))
}

// messageValue writes m bracketed whether or not it has fields: a list
// element or map value exists even when it is empty.
func (w *canonicalWriter) messageValue(m protoreflect.Message) {
	w.flush()
	w.hs.Add(kindMessage, nil)
	w.fields(m)
	w.hs.Add(kindEnd, nil)
}

// fields writes m's populated fields in number order, then its set
// extensions.
func (w *canonicalWriter) fields(m protoreflect.Message) {
	md := m.Descriptor()
	fds := md.Fields()
	if inNumberOrder(fds) {
		for i, n := 0, fds.Len(); i < n; i++ {
			w.field(m, fds.Get(i))
		}
	} else {
		// Rare: protoc users number fields in the order they declare
		// them. Sorting costs a slice per message of such a type.
		for _, fd := range byNumber(fds) {
			w.field(m, fd)
		}
	}
	if md.ExtensionRanges().Len() > 0 {
		w.extensions(m)
	}
}

func inNumberOrder(fds protoreflect.FieldDescriptors) bool {
	for i, n := 1, fds.Len(); i < n; i++ {
		if fds.Get(i-1).Number() > fds.Get(i).Number() {
			return false
		}
	}
	return true
}

func byNumber(fds protoreflect.FieldDescriptors) []protoreflect.FieldDescriptor {
	sorted := make([]protoreflect.FieldDescriptor, fds.Len())
	for i := range sorted {
		sorted[i] = fds.Get(i)
	}
	slices.SortFunc(sorted, func(a, b protoreflect.FieldDescriptor) int { return cmp.Compare(a.Number(), b.Number()) })
	return sorted
}

// extensions writes the extension fields set on m, which its descriptor's
// Fields do not list, in number order.
func (w *canonicalWriter) extensions(m protoreflect.Message) {
	var exts []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if fd.IsExtension() {
			exts = append(exts, fd)
		}
		return true
	})
	slices.SortFunc(exts, func(a, b protoreflect.FieldDescriptor) int { return cmp.Compare(a.Number(), b.Number()) })
	for _, fd := range exts {
		w.field(m, fd)
	}
}

func (w *canonicalWriter) field(m protoreflect.Message, fd protoreflect.FieldDescriptor) {
	if !m.Has(fd) {
		return
	}
	v := m.Get(fd)
	switch {
	case fd.IsList():
		w.flush()
		w.fieldNumber(fd.Number())
		list := v.List()
		w.length(kindList, list.Len())
		for i, n := 0, list.Len(); i < n; i++ {
			w.value(fd, list.Get(i))
		}
	case fd.IsMap():
		w.flush()
		w.fieldNumber(fd.Number())
		w.mapEntries(fd, v.Map())
	case inRealOneof(fd):
		w.flush()
		w.fieldNumber(fd.Number())
		w.value(fd, v)
	case fd.Message() != nil:
		w.pending = append(w.pending, fd.Number())
		depth := len(w.pending)
		w.fields(v.Message())
		if len(w.pending) == depth { // nothing written: as if unset
			w.pending = w.pending[:depth-1]
			return
		}
		w.hs.Add(kindEnd, nil)
	default:
		if isDefault(fd, v) {
			return
		}
		w.flush()
		w.fieldNumber(fd.Number())
		addLeaf(w.hs, fd, v)
	}
}

func inRealOneof(fd protoreflect.FieldDescriptor) bool {
	od := fd.ContainingOneof()
	return od != nil && !od.IsSynthetic()
}

// value writes one value of fd's type: a scalar, or a whole message.
func (w *canonicalWriter) value(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	if fd.Message() != nil {
		w.messageValue(v.Message())
		return
	}
	addLeaf(w.hs, fd, v)
}

// mapEntries writes the entries of a map field sorted by key, since a
// map's iteration order means nothing.
func (w *canonicalWriter) mapEntries(fd protoreflect.FieldDescriptor, m protoreflect.Map) {
	keyFd, valFd := fd.MapKey(), fd.MapValue()
	entries := make([]mapEntry, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		entries = append(entries, mapEntry{k, v})
		return true
	})
	slices.SortFunc(entries, mapKeyOrder(keyFd.Kind()))
	w.length(kindMap, len(entries))
	for _, e := range entries {
		addLeaf(w.hs, keyFd, e.key.Value())
		w.value(valFd, e.val)
	}
}

type mapEntry struct {
	key protoreflect.MapKey
	val protoreflect.Value
}

// mapKeyOrder orders the entries of a map whose keys are of kind k.
func mapKeyOrder(k protoreflect.Kind) func(a, b mapEntry) int {
	switch k {
	case protoreflect.BoolKind:
		return func(a, b mapEntry) int {
			switch ab, bb := a.key.Bool(), b.key.Bool(); {
			case ab == bb:
				return 0
			case !ab:
				return -1
			}
			return 1
		}
	case protoreflect.StringKind:
		return func(a, b mapEntry) int { return strings.Compare(a.key.String(), b.key.String()) }
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return func(a, b mapEntry) int { return cmp.Compare(a.key.Uint(), b.key.Uint()) }
	}
	return func(a, b mapEntry) int { return cmp.Compare(a.key.Int(), b.key.Int()) }
}

// isDefault reports a scalar equal to its field's default, which the
// getter returns for an unset field too. -0.0 equals a default of 0, and
// any NaN a default of NaN.
func isDefault(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	d := fd.Default()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool() == d.Bool()
	case protoreflect.EnumKind:
		return v.Enum() == d.Enum()
	case protoreflect.StringKind:
		return v.String() == d.String()
	case protoreflect.BytesKind:
		return bytes.Equal(v.Bytes(), d.Bytes())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f, df := v.Float(), d.Float()
		return f == df || (math.IsNaN(f) && math.IsNaN(df))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint() == d.Uint()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int() == d.Int()
	}
	return false
}

// addLeaf adds one value by kind, as a key field's value is added:
// strings and bytes as they are (empty ones too: an element of a list is
// there even when empty), booleans as text, numbers and enums canonical,
// non-finite floats as their tokens, messages canonically.
func addLeaf(hs *keyspec.Hasher, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		hs.AddString(keyspec.String, v.String())
	case protoreflect.BytesKind:
		hs.Add(keyspec.Bytes, v.Bytes())
	case protoreflect.BoolKind:
		hs.AddString(keyspec.Bool, strconv.FormatBool(v.Bool()))
	case protoreflect.EnumKind:
		addInt(hs, int64(v.Enum()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		addInt(hs, v.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		addUint(hs, v.Uint())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		addFloat(hs, v.Float())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		addCanonical(hs, v.Message())
	}
}

// The numbers are added in keyspec.CanonicalNumber's form, built in stack
// buffers: CanonicalNumber works on text and allocates, and a message can
// carry many numbers. TestCanonicalNumberForms holds the two together.

func addInt(hs *keyspec.Hasher, n int64) {
	var buf [24]byte
	digits := strconv.AppendInt(buf[:0], n, 10)
	if n < 0 {
		digits = digits[1:]
	}
	addDigits(hs, n < 0, digits, 0)
}

func addUint(hs *keyspec.Hasher, n uint64) {
	var buf [24]byte
	addDigits(hs, false, strconv.AppendUint(buf[:0], n, 10), 0)
}

// addFloat adds f with the shortest digits that identify it as a float64,
// as strconv.FormatFloat(f, 'g', -1, 64) prints them. A float field's
// value is widened to float64 first, as protoreflect returns it.
func addFloat(hs *keyspec.Hasher, f float64) {
	switch {
	case math.IsNaN(f):
		hs.AddString(keyspec.Number, textNaN)
		return
	case math.IsInf(f, 1):
		hs.AddString(keyspec.Number, textPosInf)
		return
	case math.IsInf(f, -1):
		hs.AddString(keyspec.Number, textNegInf)
		return
	}
	// 'e' with the shortest precision prints d[.ddd]e±xx: the same digits
	// as 'g', in a form that needs no more parsing than this.
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	e := bytes.IndexByte(s, 'e')
	mant, expText := s[:e], s[e+1:]
	exp := 0
	for _, c := range expText[1:] {
		exp = exp*10 + int(c-'0')
	}
	if expText[0] == '-' {
		exp = -exp
	}
	if len(mant) > 2 { // d.ddd: close up the point
		frac := len(mant) - 2
		copy(mant[1:], mant[2:])
		mant = mant[:len(mant)-1]
		exp -= frac
	}
	addDigits(hs, neg, mant, exp)
}

// addDigits adds the number digits×10^exp as CanonicalNumber writes it:
// the digits without leading or trailing zeros, 'e', the exponent; zero
// is "0" whatever its sign.
func addDigits(hs *keyspec.Hasher, neg bool, digits []byte, exp int) {
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		hs.AddString(keyspec.Number, "0")
		return
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	var buf [32]byte
	out := buf[:0]
	if neg {
		out = append(out, '-')
	}
	out = append(out, digits...)
	out = append(out, 'e')
	out = strconv.AppendInt(out, int64(exp), 10)
	hs.AddString(keyspec.Number, string(out))
}
