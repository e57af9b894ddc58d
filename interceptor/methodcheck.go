package interceptor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// fixMethod says how to name a method, for the error of a rule whose
// service is not linked.
const fixMethod = "Method is /<proto package>.<Service>/<Method> as the service's .proto declares it " +
	"(the FullMethodName constants of its _grpc.pb.go spell it), " +
	"or set SkipMethodCheck on a rule for a method registered at run time"

// maxSuggestions bounds the "did you mean" list: in a large binary a
// method name such as Get is served by many services.
const maxSuggestions = 3

// linkedMethod finds the method a rule names among the services linked
// into the binary, which generated code registers in
// protoregistry.GlobalFiles. A rule for any other method would lock
// nothing, so the error says what is linked instead.
func linkedMethod(service, method string) (protoreflect.MethodDescriptor, error) {
	sd, ok := linkedService(service)
	if !ok {
		return nil, fmt.Errorf("no service linked into this binary is named %s (%s): %s",
			service, notLinkedHint(service, method), fixMethod)
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s: set Method to one of its methods (%s), "+
			"or set SkipMethodCheck on a rule for a method registered at run time",
			service, method, strings.Join(methodNames(sd), ", "))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, errStreaming
	}
	return md, nil
}

// checkClientMethod checks a ClientConf method as linkedMethod checks a
// rule's, but accepts, logged, one whose service is not linked: a client
// may call a service it has no generated code for.
func checkClientMethod(full string) error {
	service, method, ok := splitMethod(full)
	if !ok {
		return errors.New("a method is /<proto package>.<Service>/<Method> as the service's .proto declares it " +
			"(the FullMethodName constants of its _grpc.pb.go spell it): correct it")
	}
	sd, ok := linkedService(service)
	if !ok {
		logx.Errorf("zerolock: client method %s: no service linked into this binary is named %s (%s); "+
			"its calls get keys and retries all the same, but check the name if the service's generated code is linked",
			full, service, notLinkedHint(service, method))
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return fmt.Errorf("service %s has no method %s: set it to one of its methods (%s)",
			service, method, strings.Join(methodNames(sd), ", "))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return errors.New("it is a streaming method, which a unary interceptor never sees: remove it from Methods")
	}
	return nil
}

// linkedService finds a service among those linked into the binary, which
// generated code registers in protoregistry.GlobalFiles.
func linkedService(service string) (protoreflect.ServiceDescriptor, bool) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, false
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	return sd, ok
}

// notLinkedHint says, of a service that is not linked, which linked
// services have the method, if any.
func notLinkedHint(service, method string) string {
	if candidates := linkedServing(service, method); len(candidates) > 0 {
		return didYouMean(candidates)
	}
	return fmt.Sprintf("and none has a method %s", method)
}

// methodNames lists sd's methods as full method names.
func methodNames(sd protoreflect.ServiceDescriptor) []string {
	names := make([]string, sd.Methods().Len())
	for i := range names {
		names[i] = fullMethod(string(sd.FullName()), string(sd.Methods().Get(i).Name()))
	}
	return names
}

// linkedServing lists the linked services that have a method of that
// name, as full method names.
func linkedServing(service, method string) []string {
	var found []string
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := 0; i < f.Services().Len(); i++ {
			sd := f.Services().Get(i)
			if sd.Methods().ByName(protoreflect.Name(method)) != nil {
				found = append(found, string(sd.FullName()))
			}
		}
		return true
	})
	return rankSuggestions(found, service, method)
}

// rankSuggestions turns the services that have the method into full
// method names, those whose name matches the rule's service without its
// package first: /payments.Payments/Pay is most likely /pay.Payments/Pay.
func rankSuggestions(services []string, service, method string) []string {
	short := func(s string) string { return s[strings.LastIndex(s, ".")+1:] }
	slices.SortFunc(services, func(a, b string) int {
		am, bm := short(a) == short(service), short(b) == short(service)
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make([]string, len(services))
	for i, s := range services {
		out[i] = fullMethod(s, method)
	}
	return out
}

// didYouMean phrases candidates for an error message.
func didYouMean(candidates []string) string {
	if len(candidates) > maxSuggestions {
		return fmt.Sprintf("did you mean %s, or one of %d more?",
			strings.Join(candidates[:maxSuggestions], ", "), len(candidates)-maxSuggestions)
	}
	return fmt.Sprintf("did you mean %s?", strings.Join(candidates, " or "))
}

// errStreaming refuses a rule for a streaming method.
var errStreaming = errors.New("it is a streaming method, which a unary interceptor never sees: remove the rule")

func fullMethod(service, method string) string {
	return "/" + service + "/" + method
}

// CheckServed checks that server serves the method of each of c's rules,
// except those with SkipMethodCheck. Call it once the services are
// registered, in zrpc's register callback:
//
//	server := zrpc.MustNewServer(c.RpcServerConf, func(s *grpc.Server) {
//		pb.RegisterPaymentsServer(s, srv)
//		logx.Must(interceptor.CheckServed(s, c.Lock))
//	})
//
// UnaryServerInterceptor already refuses a method that no linked service
// declares; CheckServed also catches one that is linked but not served
// here, such as a rule copied from another service that shares the proto
// package. Either way the rule would lock nothing. The error wraps
// ErrBadConfig and names each such rule, what the server serves, and the
// fix. It returns nil for a server that serves every rule's method.
func CheckServed(server *grpc.Server, c LockConf) error {
	served := server.GetServiceInfo()
	var errs []error
	for _, r := range c.Rules {
		if r.SkipMethodCheck {
			continue
		}
		if err := checkServed(served, r.Method); err != nil {
			errs = append(errs, fmt.Errorf("%w: rule %s: %v", ErrBadConfig, r.Method, err))
		}
	}
	return errors.Join(errs...)
}

func checkServed(served map[string]grpc.ServiceInfo, full string) error {
	service, method, ok := splitMethod(full)
	if !ok {
		return errors.New("method must be /package.Service/Method")
	}
	info, ok := served[service]
	if !ok {
		var serving []string
		for name, info := range served {
			for _, m := range info.Methods {
				if m.Name == method {
					serving = append(serving, name)
				}
			}
		}
		list := "no service yet"
		if len(served) > 0 {
			list = strings.Join(slices.Sorted(maps.Keys(served)), ", ")
		}
		if candidates := rankSuggestions(serving, service, method); len(candidates) > 0 {
			list += "; " + didYouMean(candidates)
		}
		return fmt.Errorf("this server does not serve %s (it serves %s): correct the rule's Method, "+
			"or call CheckServed after registering the service", service, list)
	}
	names := make([]string, 0, len(info.Methods))
	for _, m := range info.Methods {
		if m.Name != method {
			names = append(names, fullMethod(service, m.Name))
			continue
		}
		if m.IsClientStream || m.IsServerStream {
			return errStreaming
		}
		return nil
	}
	slices.Sort(names)
	return fmt.Errorf("service %s on this server has no method %s: set Method to one of its methods (%s)",
		service, method, strings.Join(names, ", "))
}
