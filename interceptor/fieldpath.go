package interceptor

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// errMissing marks a field path that leads to no value in a message.
var errMissing = errors.New("missing")

// stepKind is what one step of a field path does.
type stepKind int

const (
	stepField  stepKind = iota // read a field of a message
	stepIndex                  // index a repeated field
	stepMapKey                 // look up a map field
)

type step struct {
	kind  stepKind
	field protoreflect.FieldDescriptor
	index int
	key   protoreflect.MapKey
}

// fieldPath is a dotted path checked against a message descriptor.
type fieldPath struct {
	spec  keyspec.Spec
	steps []step
	leaf  protoreflect.FieldDescriptor // the field (or map value) the path ends on
}

// compileFieldPath resolves spec's path in md: each segment names a field
// by proto or JSON name; after a repeated field comes an index, after a map
// field a key. The path must end on a single value, not a whole list or map.
func compileFieldPath(md protoreflect.MessageDescriptor, spec keyspec.Spec) (*fieldPath, error) {
	fp := &fieldPath{spec: spec}
	segs := spec.Path
	cur := md
	for i := 0; i < len(segs); i++ {
		if cur == nil {
			return nil, fmt.Errorf("%q: %s is not a message, so it has no field %q", spec.Raw, fp.leaf.FullName(), segs[i])
		}
		fd := cur.Fields().ByName(protoreflect.Name(segs[i]))
		if fd == nil {
			fd = cur.Fields().ByJSONName(segs[i])
		}
		if fd == nil {
			return nil, fmt.Errorf("%q: message %s has no field %q", spec.Raw, cur.FullName(), segs[i])
		}
		fp.steps = append(fp.steps, step{kind: stepField, field: fd})
		fp.leaf = fd
		switch {
		case fd.IsList():
			i++
			if i == len(segs) {
				return nil, fmt.Errorf("%q: repeated field %s needs an index after it", spec.Raw, fd.FullName())
			}
			idx, err := strconv.Atoi(segs[i])
			if err != nil || idx < 0 {
				return nil, fmt.Errorf("%q: %q is not an index into repeated field %s", spec.Raw, segs[i], fd.FullName())
			}
			fp.steps = append(fp.steps, step{kind: stepIndex, field: fd, index: idx})
		case fd.IsMap():
			i++
			if i == len(segs) {
				return nil, fmt.Errorf("%q: map field %s needs a key after it", spec.Raw, fd.FullName())
			}
			key, err := parseMapKey(fd.MapKey(), segs[i])
			if err != nil {
				return nil, fmt.Errorf("%q: %q is not a key of map field %s: %v", spec.Raw, segs[i], fd.FullName(), err)
			}
			fp.steps = append(fp.steps, step{kind: stepMapKey, field: fd, key: key})
			fp.leaf = fd.MapValue()
		}
		cur = fp.leaf.Message()
	}
	return fp, nil
}

func parseMapKey(fd protoreflect.FieldDescriptor, s string) (protoreflect.MapKey, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s).MapKey(), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(s)
		return protoreflect.ValueOfBool(b).MapKey(), err
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(s, 10, 32)
		return protoreflect.ValueOfInt32(int32(n)).MapKey(), err
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(s, 10, 64)
		return protoreflect.ValueOfInt64(n).MapKey(), err
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(s, 10, 32)
		return protoreflect.ValueOfUint32(uint32(n)).MapKey(), err
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(s, 10, 64)
		return protoreflect.ValueOfUint64(n).MapKey(), err
	}
	return protoreflect.MapKey{}, fmt.Errorf("unsupported map key kind %s", fd.Kind())
}

// add follows the path through msg and adds the value it ends on. It
// returns errMissing when a field on the way is unset, an index is out of
// range, a key is absent, or the value is empty.
func (fp *fieldPath) add(hs *keyspec.Hasher, msg protoreflect.Message) error {
	var val protoreflect.Value
	for i, st := range fp.steps {
		switch st.kind {
		case stepField:
			if !msg.Has(st.field) {
				return errMissing
			}
			val = msg.Get(st.field)
		case stepIndex:
			list := val.List()
			if st.index >= list.Len() {
				return errMissing
			}
			val = list.Get(st.index)
		case stepMapKey:
			m := val.Map()
			if !m.Has(st.key) {
				return errMissing
			}
			val = m.Get(st.key)
		}
		if i+1 < len(fp.steps) && fp.steps[i+1].kind == stepField {
			msg = val.Message()
		}
	}
	return addScalar(hs, fp.leaf, val)
}

// addScalar adds the value a key field path ends on, by kind as addLeaf
// does: numbers of every width canonical (so int32 7 and uint64 7 agree),
// enums by number, messages in their canonical form (see addCanonical).
// Empty strings and bytes, and a message that encodes to nothing, count as
// missing, like an unset field; NaN and infinities are refused, since no
// call is identified by them.
func addScalar(hs *keyspec.Hasher, fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if v.String() == "" {
			return errMissing
		}
	case protoreflect.BytesKind:
		if len(v.Bytes()) == 0 {
			return errMissing
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("not a finite number")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return addCanonicalField(hs, v.Message())
	}
	addLeaf(hs, fd, v)
	return nil
}
