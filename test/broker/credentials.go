package broker

import (
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/osb"
)

// makeCredentials builds credentials shaped like a real data service's, with a
// fresh random password, so tests notice when a platform mixes up, caches or
// leaks the credentials of different bindings. A rotated binding keeps its
// predecessor's username, as rotation in real services usually does.
func makeCredentials(svc *osb.Service, tmpl CredentialsTemplate, instanceID, bindingID string, predecessor *Binding) (map[string]any, []osb.Endpoint) {
	scheme := tmpl.Scheme
	if scheme == "" {
		scheme = sanitizeName(svc.Name)
	}
	port := tmpl.Port
	if port == 0 {
		port = 443
	}
	host := fmt.Sprintf("%s-%s.test-broker.internal", sanitizeName(svc.Name), shortID(instanceID))
	username := "u_" + shortID(bindingID)
	if predecessor != nil {
		if u, ok := predecessor.Credentials["username"].(string); ok {
			username = u
		}
	}
	password := randomPassword()
	database := "db_" + shortID(instanceID)
	uri := url.URL{
		Scheme: scheme,
		User:   url.UserPassword(username, password),
		Host:   fmt.Sprintf("%s:%d", host, port),
		Path:   "/" + database,
	}
	creds := map[string]any{
		"host":     host,
		"port":     port,
		"username": username,
		"password": password,
		"database": database,
		"uri":      uri.String(),
		"tls": map[string]any{
			"enabled":     true,
			"server_name": host,
			"min_version": "1.2",
		},
	}
	endpoints := []osb.Endpoint{{Host: host, Ports: []string{fmt.Sprint(port)}, Protocol: osb.ProtocolTCP}}
	return creds, endpoints
}

// bindingExpiry is the binding metadata of a plan with a binding TTL.
func bindingExpiry(pb PlanBehaviour, created time.Time) *osb.BindingMetadata {
	if pb.BindingTTL <= 0 {
		return nil
	}
	ttl := time.Duration(pb.BindingTTL)
	renew := time.Duration(pb.RenewBefore)
	if renew == 0 {
		renew = ttl / 5
	}
	expires := created.Add(ttl).UTC()
	return &osb.BindingMetadata{
		ExpiresAt:   expires.Format(isoMillis),
		RenewBefore: expires.Add(-renew).Format(isoMillis),
	}
}

// isoMillis is the spec's "yyyy-mm-ddThh:mm:ss.sZ" with millisecond precision.
const isoMillis = "2006-01-02T15:04:05.000Z"

func randomPassword() string {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	for i, b := range buf {
		buf[i] = alphabet[int(b)%len(alphabet)]
	}
	return string(buf)
}

// shortID is a DNS- and identifier-safe prefix of an id.
func shortID(id string) string {
	s := sanitizeName(strings.ReplaceAll(id, "-", ""))
	if len(s) > 8 {
		s = s[:8]
	}
	if s == "" {
		s = "x"
	}
	return s
}

func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '.' || r == '_' || r == ' ':
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// volumeMount is the volume a volume_mount service hands out: one shared NFS
// export per instance.
func volumeMount(instanceID string) osb.VolumeMount {
	return osb.VolumeMount{
		Driver:       "nfsv3driver",
		ContainerDir: "/var/vcap/data/" + shortID(instanceID),
		Mode:         osb.VolumeModeReadWrite,
		DeviceType:   osb.DeviceTypeShared,
		Device: osb.VolumeMountDevice{
			VolumeID:    "vol-" + shortID(instanceID),
			MountConfig: map[string]any{"source": "nfs://nfs.test-broker.internal/exports/" + shortID(instanceID)},
		},
	}
}
