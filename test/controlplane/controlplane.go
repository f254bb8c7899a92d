// Package controlplane starts a real Kubernetes control plane (etcd,
// kube-apiserver with RBAC, kube-controller-manager) on loopback for the
// end-to-end tests and for `make cluster-up`. Nothing in it is a fake:
// namespace deletion, garbage collection of owned objects and RBAC behave as
// in a cluster.
package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The static-token users of every control plane.
const (
	// AdminUser is in system:masters: it may do anything.
	AdminUser = "admin"
	// DeveloperUser has no role at all: RBAC refuses it everything but
	// discovery, until a test grants it a role.
	DeveloperUser = "developer"
	// AliceUser and BobUser are only in system:authenticated (added by the
	// API server) and have no role until a test grants them one: two
	// ordinary users, for tests about who wrote what.
	AliceUser = "alice"
	BobUser   = "bob"
)

// Options tune Start.
type Options struct {
	// Dir holds data, certificates, logs and kubeconfigs. A temporary
	// directory is made when empty, and removed by Stop.
	Dir string
	// Log receives progress messages (the first build of the binaries can
	// take minutes). Defaults to io.Discard.
	Log io.Writer
	// StartTimeout bounds how long Start waits for readiness.
	StartTimeout time.Duration
	// EtcdQuotaBytes is etcd's --quota-backend-bytes (its database's size limit);
	// etcd's own default (2 GiB) when zero. A cluster of 100,000 records and their
	// updates needs more before the API server compacts the history.
	EtcdQuotaBytes int64
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir holds everything the control plane writes.
	Dir string
	// Server is the API server's URL.
	Server string
	// CAFile is the certificate the API server serves (self-signed).
	CAFile string
	// EtcdURL is etcd's client URL (plain HTTP on loopback); its /debug/pprof
	// endpoints are on, for the bench's profiles.
	EtcdURL string
	// Binaries are the programs in use, including kubectl.
	Binaries Binaries

	tokens     map[string]string
	ownDir     bool
	starter    *starter
	etcd       *process
	apiserver  *process
	controller *process
	// apiserverArgs start the API server again after StopAPIServer.
	apiserverArgs []string
	// etcdQuota is Options.EtcdQuotaBytes.
	etcdQuota int64
}

// Start builds the binaries if needed, starts etcd, the API server and the
// controller manager on free loopback ports, and waits until they are ready.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	bins, err := EnsureBinaries(opts.Log)
	if err != nil {
		return nil, err
	}
	c := &ControlPlane{Dir: opts.Dir, Binaries: bins, starter: newStarter(), etcdQuota: opts.EtcdQuotaBytes}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "kubectl-catalog-cp-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	for _, d := range []string{"etcd", "certs", "logs"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	saKey, err := writeServiceAccountKey(filepath.Join(c.Dir, "certs", "sa.key"))
	if err != nil {
		return nil, err
	}
	if err := c.writeTokens(); err != nil {
		return nil, err
	}
	// The ports are chosen free, but another process may take one before etcd or the
	// API server binds it: then that component exits at once, and both start again on
	// other ports.
	for attempt := 1; ; attempt++ {
		err = c.startServers(ctx, saKey)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == maxStartAttempts {
			return nil, err
		}
		fmt.Fprintf(opts.Log, "%s; starting etcd and kube-apiserver again on other ports\n", firstLine(err.Error()))
		if err := c.stopServers(); err != nil {
			return nil, err
		}
	}
	for _, u := range []string{AdminUser, DeveloperUser, AliceUser, BobUser} {
		if err := c.writeKubeconfig(u); err != nil {
			return nil, err
		}
	}

	c.controller, err = startProcess(c.starter, "kube-controller-manager", c.logPath("kube-controller-manager"), bins.ControllerManager,
		"--kubeconfig", c.Kubeconfig(AdminUser),
		"--authentication-kubeconfig", c.Kubeconfig(AdminUser),
		"--authorization-kubeconfig", c.Kubeconfig(AdminUser),
		"--service-account-private-key-file", saKey,
		"--root-ca-file", c.CAFile,
		"--secure-port", "0",
		"--leader-elect=false",
	)
	if err != nil {
		return nil, err
	}
	if err := c.waitControllerManager(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// maxStartAttempts is how many times Start starts etcd and the API server on fresh
// ports when a port was taken before they bound it.
const maxStartAttempts = 5

// pickPorts chooses the loopback ports of etcd (client, peer) and the API server.
var pickPorts = freePorts

// startServers starts etcd and the API server on fresh ports and waits until the API
// server is ready. An error wrapping errPortTaken means one of them found its port
// taken and exited; stopServers then clears the way to try again.
func (c *ControlPlane) startServers(ctx context.Context, saKey string) error {
	ports, err := pickPorts(3)
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	etcdArgs := []string{"--name", "default",
		"--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default=" + peerURL,
		"--unsafe-no-fsync", "--log-level", "warn", "--enable-pprof"}
	c.EtcdURL = etcdURL
	if c.etcdQuota > 0 {
		etcdArgs = append(etcdArgs, "--quota-backend-bytes", fmt.Sprint(c.etcdQuota))
	}
	c.etcd, err = startProcess(c.starter, "etcd", c.logPath("etcd"), c.Binaries.Etcd, etcdArgs...)
	if err != nil {
		return err
	}
	// The API server starts only once etcd itself listens on both ports: whatever else
	// answers on them (another test's etcd) is not this control plane's.
	if err := c.waitListening(ctx, c.etcd, ports[0], ports[1]); err != nil {
		return err
	}

	c.Server = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	c.CAFile = filepath.Join(c.Dir, "certs", "apiserver.crt")
	c.apiserverArgs = []string{
		"--etcd-servers", etcdURL,
		"--cert-dir", filepath.Join(c.Dir, "certs"),
		"--secure-port", fmt.Sprint(ports[2]),
		"--bind-address", "127.0.0.1",
		"--token-auth-file", filepath.Join(c.Dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-key-file", saKey,
		"--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--enable-priority-and-fairness=false",
	}
	c.apiserver, err = startProcess(c.starter, "kube-apiserver", c.logPath("kube-apiserver"), c.Binaries.APIServer, c.apiserverArgs...)
	if err != nil {
		return err
	}
	if err := c.waitListening(ctx, c.apiserver, ports[2]); err != nil {
		return err
	}
	return c.waitAPIServer(ctx)
}

// stopServers stops the API server and etcd a failed startServers left, and empties
// etcd's data directory for the next attempt.
func (c *ControlPlane) stopServers() error {
	for _, p := range []*process{c.apiserver, c.etcd} {
		if p != nil {
			if err := p.kill(10 * time.Second); err != nil {
				return err
			}
		}
	}
	c.apiserver, c.etcd = nil, nil
	data := filepath.Join(c.Dir, "etcd")
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	return os.MkdirAll(data, 0o700)
}

// waitListening waits until the process p listens on every one of ports.
func (c *ControlPlane) waitListening(ctx context.Context, p *process, ports ...int) error {
	return poll(ctx, func() error {
		if !p.running() {
			return c.exitError(p)
		}
		listening, err := listeningPorts(p.cmd.Process.Pid)
		if err != nil {
			// The process may have exited since it was seen running (its /proc entry
			// goes first): look again, and report how it exited once that is known.
			if !p.running() {
				return c.exitError(p)
			}
			return errNotReady
		}
		for _, port := range ports {
			if !listening[port] {
				return errNotReady
			}
		}
		return nil
	}, p.name+" listening on its ports", func() string { return c.LogTail(p.name, 30) })
}

// errPortTaken is wrapped by the error of a component that exited because its port
// was taken.
var errPortTaken = errors.New("port taken")

// exitError describes how the process p exited, with the end of its log; it wraps
// errPortTaken when p could not bind its port.
func (c *ControlPlane) exitError(p *process) error {
	tail := c.LogTail(p.name, 30)
	err := fmt.Errorf("%s exited: %v\n%s", p.name, p.err, tail)
	if strings.Contains(tail, "address already in use") {
		return &portTakenError{err}
	}
	return err
}

type portTakenError struct{ err error }

func (e *portTakenError) Error() string        { return e.err.Error() }
func (e *portTakenError) Is(target error) bool { return target == errPortTaken }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Kubeconfig returns the path of a kubeconfig for one of the users.
func (c *ControlPlane) Kubeconfig(user string) string {
	return filepath.Join(c.Dir, "kubeconfig-"+user)
}

// Token returns a user's bearer token.
func (c *ControlPlane) Token(user string) string { return c.tokens[user] }

// RESTConfig returns a client configuration for one of the users.
func (c *ControlPlane) RESTConfig(user string) *rest.Config {
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     c.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile},
		QPS:             100,
		Burst:           200,
	}
}

// Client returns a typed client for one of the users.
func (c *ControlPlane) Client(user string) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.RESTConfig(user))
}

// Stop stops the controller manager and the API server before etcd (the API
// server hangs on shutdown when etcd goes first), removes the directory if
// Start made it, and fails if any process it started is still alive.
func (c *ControlPlane) Stop() error {
	var errs []error
	for _, p := range []*process{c.controller, c.apiserver, c.etcd} {
		if p != nil {
			if err := p.stop(20 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.Dir != "" {
		if pids, err := processesUsing(c.Dir); err != nil {
			errs = append(errs, err)
		} else if len(pids) > 0 {
			errs = append(errs, fmt.Errorf("processes %v outlived the control plane in %s", pids, c.Dir))
		}
	}
	if c.ownDir && len(errs) == 0 {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CPU is the processor time (user and system) each component used, for the
// components that have exited: after Stop, all of them. An API server stopped and
// started again counts its last run only.
func (c *ControlPlane) CPU() map[string]time.Duration {
	used := map[string]time.Duration{}
	for _, p := range []*process{c.etcd, c.apiserver, c.controller} {
		if p == nil || p.running() || p.cmd.ProcessState == nil {
			continue
		}
		used[p.name] += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	}
	return used
}

// StopAPIServer kills the API server alone (SIGKILL: a graceful stop waits for the
// clients' watches to end), as a crash or a network partition looks to its clients;
// etcd and the controller manager go on. StartAPIServer brings it back on the same
// address, certificates and data. Use them on a control plane of the test's own
// (Start), not on one a whole package shares.
func (c *ControlPlane) StopAPIServer() error {
	if c.apiserver == nil {
		return errors.New("the API server was not started")
	}
	return c.apiserver.kill(10 * time.Second)
}

// StartAPIServer starts the API server again after StopAPIServer, and waits until it
// is ready. The log of the API server stopped is kept as kube-apiserver.1.log.
func (c *ControlPlane) StartAPIServer(ctx context.Context) error {
	if c.apiserver != nil && c.apiserver.running() {
		return errors.New("the API server is running")
	}
	if err := os.Rename(c.logPath("kube-apiserver"), c.logPath("kube-apiserver.1")); err != nil {
		return err
	}
	p, err := startProcess(c.starter, "kube-apiserver", c.logPath("kube-apiserver"), c.Binaries.APIServer, c.apiserverArgs...)
	if err != nil {
		return err
	}
	c.apiserver = p
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return c.waitAPIServer(ctx)
}

func (c *ControlPlane) logPath(name string) string {
	return filepath.Join(c.Dir, "logs", name+".log")
}

// LogTail returns the last lines of a component's log, for failure messages.
func (c *ControlPlane) LogTail(name string, lines int) string {
	b, err := os.ReadFile(c.logPath(name))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func (c *ControlPlane) writeTokens() error {
	c.tokens = map[string]string{}
	var b strings.Builder
	for _, u := range []struct{ name, groups string }{
		{AdminUser, "system:masters"},
		{DeveloperUser, "developers"},
		{AliceUser, ""},
		{BobUser, ""},
	} {
		tok := make([]byte, 16)
		if _, err := rand.Read(tok); err != nil {
			return err
		}
		c.tokens[u.name] = hex.EncodeToString(tok)
		if u.groups == "" {
			// No groups column: an empty one would be a group named "".
			fmt.Fprintf(&b, "%s,%s,%s-uid\n", c.tokens[u.name], u.name, u.name)
			continue
		}
		fmt.Fprintf(&b, "%s,%s,%s-uid,\"%s\"\n", c.tokens[u.name], u.name, u.name, u.groups)
	}
	return os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(b.String()), 0o600)
}

func (c *ControlPlane) writeKubeconfig(user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthority: c.CAFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: c.tokens[user]}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = user
	return clientcmd.WriteToFile(*cfg, c.Kubeconfig(user))
}

func (c *ControlPlane) waitAPIServer(ctx context.Context) error {
	return poll(ctx, func() error {
		for _, p := range []*process{c.etcd, c.apiserver} {
			if !p.running() {
				return c.exitError(p)
			}
		}
		ca, err := os.ReadFile(c.CAFile)
		if err != nil {
			return errNotReady
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		client := &http.Client{
			Timeout:   5 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.tokens[AdminUser])
		resp, err := client.Do(req)
		if err != nil {
			return errNotReady
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errNotReady
		}
		return nil
	}, "kube-apiserver", func() string { return c.LogTail("kube-apiserver", 30) })
}

// waitControllerManager waits for the service account controller to create
// the default namespace's ServiceAccount: proof the controllers run.
func (c *ControlPlane) waitControllerManager(ctx context.Context) error {
	client, err := c.Client(AdminUser)
	if err != nil {
		return err
	}
	return poll(ctx, func() error {
		if !c.controller.running() {
			return fmt.Errorf("kube-controller-manager exited: %v\n%s", c.controller.err, c.LogTail("kube-controller-manager", 30))
		}
		if _, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return errNotReady
		}
		return nil
	}, "kube-controller-manager", func() string { return c.LogTail("kube-controller-manager", 30) })
}

// poll calls check until it returns nil or a fatal error, or ctx ends.
func poll(ctx context.Context, check func() error, what string, tail func() string) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNotReady) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w\n%s", what, ctx.Err(), tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeServiceAccountKey(path string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return path, os.WriteFile(path, b, 0o600)
}

// freePorts returns n distinct free loopback ports. All listeners stay open
// until every port is chosen, so no two are the same.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
