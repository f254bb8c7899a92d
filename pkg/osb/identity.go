package osb

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// HeaderValue renders the identity as the value of HeaderOriginatingIdentity
// for the Kubernetes profile: "kubernetes " followed by the base64 of the
// JSON object. Nil Groups and Extra are sent as [] and {} because the
// profile requires all four keys.
func (o OriginatingIdentity) HeaderValue() (string, error) {
	if o.Groups == nil {
		o.Groups = []string{}
	}
	if o.Extra == nil {
		o.Extra = map[string][]string{}
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("osb: encoding originating identity of user %q: %w", o.Username, err)
	}
	return PlatformKubernetes + " " + base64.StdEncoding.EncodeToString(raw), nil
}

// ParseOriginatingIdentity decodes a HeaderOriginatingIdentity value of the
// form "<platform> <base64 JSON>". It returns the platform and, when the
// platform is PlatformKubernetes, the decoded identity; for other platforms
// the identity is nil and only the encoding is checked.
func ParseOriginatingIdentity(header string) (string, *OriginatingIdentity, error) {
	platform, value, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || platform == "" || value == "" {
		return "", nil, errors.New("osb: originating identity header is not \"<platform> <base64 value>\"")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil {
		return platform, nil, fmt.Errorf("osb: originating identity value for platform %q is not base64: %w", platform, err)
	}
	if platform != PlatformKubernetes {
		if !json.Valid(raw) {
			return platform, nil, fmt.Errorf("osb: originating identity value for platform %q is not JSON", platform)
		}
		return platform, nil, nil
	}
	var id OriginatingIdentity
	if err := json.Unmarshal(raw, &id); err != nil {
		return platform, nil, fmt.Errorf("osb: originating identity value for platform %q is not a JSON object: %w", platform, err)
	}
	return platform, &id, nil
}
