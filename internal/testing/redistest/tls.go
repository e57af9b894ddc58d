package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// StartTLS runs a redis-server as Start does that also serves TLS on a
// second loopback port, whose address it returns: the plain port (Addr)
// is for the test's own admin client and the readiness check, the TLS
// port for the store under test. The certificate is self-signed, made for
// the test, and clients are not asked for one (go-zero's TLS client does
// not verify the server's certificate, nor present its own).
func StartTLS(tb testing.TB) (srv *Server, tlsAddr string) {
	tb.Helper()
	dir := tb.TempDir()
	cert, key := filepath.Join(dir, "redis.crt"), filepath.Join(dir, "redis.key")
	if err := writeSelfSigned(cert, key); err != nil {
		tb.Fatalf("redistest: certificate: %v", err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	srv = Start(tb, "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", cert, "--tls-auth-clients", "no")
	return srv, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key, in PEM, to the two paths.
func writeSelfSigned(certPath, keyPath string) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zerolock-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
