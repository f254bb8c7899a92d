package cmdutil

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DoctorHint ends every error about reaching or using the cluster.
const DoctorHint = `run "kubectl catalog doctor"`

// ClusterError is an error reaching the API server, or one the API server gave
// about the user's credentials (401) or permissions (403), told with the server,
// context and user it concerns instead of a raw request URL.
type ClusterError struct {
	// Server, Context and User are where the command went, as the kubeconfig and
	// the flags say; empty when unknown.
	Server, Context, User string
	// Cause is what went wrong, in a few words.
	Cause string
	// Kind is "connect", "unauthorized" or "forbidden".
	Kind string
	Err  error
}

func (e *ClusterError) Unwrap() error { return e.Err }

func (e *ClusterError) Error() string {
	where := "the cluster"
	if e.Server != "" {
		where += " at " + e.Server
	}
	if e.Context != "" {
		where += fmt.Sprintf(" (context %q)", e.Context)
	}
	user := ""
	if e.User != "" {
		user = fmt.Sprintf(" of user %q", e.User)
	}
	switch e.Kind {
	case "unauthorized":
		return fmt.Sprintf("%s does not accept the credentials%s (401 Unauthorized): they are missing, wrong or expired; %s", where, user, DoctorHint)
	case "forbidden":
		return fmt.Sprintf("%s; %s refused it for user %q (403 Forbidden); %s", e.Cause, where, e.userOr(), DoctorHint)
	}
	return fmt.Sprintf("cannot reach %s: %s; %s", where, e.Cause, DoctorHint)
}

func (e *ClusterError) userOr() string {
	if e.User != "" {
		return e.User
	}
	return "(from the kubeconfig)"
}

// Target is where the factory's clients go: the API server's URL, the
// kubeconfig context and its user, from the kubeconfig and the connection flags.
// What cannot be determined is left empty.
func (f *Factory) Target() (server, context, user string) {
	raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err == nil {
		context = raw.CurrentContext
		if f.ConfigFlags.Context != nil && *f.ConfigFlags.Context != "" {
			context = *f.ConfigFlags.Context
		}
		if c, ok := raw.Contexts[context]; ok {
			user = c.AuthInfo
			if cl, ok := raw.Clusters[c.Cluster]; ok {
				server = cl.Server
			}
		}
	}
	if f.ConfigFlags.AuthInfoName != nil && *f.ConfigFlags.AuthInfoName != "" {
		user = *f.ConfigFlags.AuthInfoName
	}
	if f.ConfigFlags.Impersonate != nil && *f.ConfigFlags.Impersonate != "" {
		user = *f.ConfigFlags.Impersonate
	}
	if f.ConfigFlags.APIServer != nil && *f.ConfigFlags.APIServer != "" {
		server = *f.ConfigFlags.APIServer
	}
	if f.restConfig != nil && f.restConfig.Host != "" {
		server = f.restConfig.Host
	}
	return server, context, user
}

// ExplainClusterError returns err told as a *ClusterError when it is a failure
// to reach the API server (refused, unknown host, timeout, untrusted
// certificate) or a 401/403 from it; any other error is returned as it is.
func (f *Factory) ExplainClusterError(err error) error {
	var already *ClusterError
	if err == nil || errors.As(err, &already) || errors.Is(err, context.Canceled) {
		return err
	}
	kind, cause := classify(err)
	if kind == "" {
		return err
	}
	ce := &ClusterError{Kind: kind, Cause: cause, Err: err}
	ce.Server, ce.Context, ce.User = f.Target()
	if kind == "forbidden" {
		if s := apiUser(err); s != "" {
			ce.User = s
		}
	}
	return ce
}

// classify says whether err is a connection, 401 or 403 error and, for a
// connection error, what went wrong in a few words; for a 403 the cause is the
// message of err itself (it names what was refused).
func classify(err error) (kind, cause string) {
	switch {
	case apierrors.IsUnauthorized(err):
		return "unauthorized", ""
	case apierrors.IsForbidden(err) && isAuthzForbidden(err):
		return "forbidden", err.Error()
	}
	var uerr *url.Error
	if !errors.As(err, &uerr) {
		return "", ""
	}
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var certErr x509.CertificateInvalidError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connect", "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "connect", "no route to host"
	case errors.As(err, &dnsErr):
		return "connect", fmt.Sprintf("unknown host %q", dnsErr.Name)
	case errors.As(err, &unknownCA):
		return "connect", "its certificate is signed by an authority the kubeconfig does not trust"
	case errors.As(err, &hostErr):
		return "connect", "its certificate is not valid for that host name"
	case errors.As(err, &certErr):
		return "connect", "its certificate is not valid (" + certErr.Error() + ")"
	case errors.Is(err, os.ErrDeadlineExceeded), uerr.Timeout():
		return "connect", "the connection timed out"
	case errors.Is(err, syscall.ECONNRESET):
		return "connect", "the connection was reset"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return "connect", opErr.Err.Error()
	}
	return "", ""
}

// isAuthzForbidden reports whether a 403 is the authorizer's (RBAC's) refusal, which
// names the user, rather than an admission refusal that explains itself.
func isAuthzForbidden(err error) bool {
	return strings.Contains(err.Error(), "User \"") || strings.Contains(err.Error(), "cannot ")
}

// apiUser is the user a 403 names (`User "alice" cannot ...`), if any.
func apiUser(err error) string {
	msg := err.Error()
	i := strings.Index(msg, `User "`)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(`User "`):]
	if j := strings.Index(rest, `"`); j >= 0 {
		return rest[:j]
	}
	return ""
}

// svcatSecretRef is svcat's SECRET[KEY], which svcat's -s took.
var svcatSecretRef = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\[[^\]]*\]$`)

// CheckServerFlag refuses a --server (-s) value shaped like svcat's -s
// SECRET[KEY] (parameters from a Secret): here -s is kubectl's --server, and
// such a value would send the requests to a host named after the Secret. It is
// a usage error, found before any connection is attempted.
func (f *Factory) CheckServerFlag() error {
	if f.ConfigFlags.APIServer == nil {
		return nil
	}
	v := *f.ConfigFlags.APIServer
	if !svcatSecretRef.MatchString(v) {
		return nil
	}
	name, key, _ := strings.Cut(strings.TrimSuffix(v, "]"), "[")
	ref := name
	if key != "" {
		ref += "/" + key
	}
	return UsageErrorf("-s/--server %q looks like svcat's -s SECRET[KEY], but -s is kubectl's --server (the API server's address): for parameters from a Secret use --params-from-secret %s", v, ref)
}
