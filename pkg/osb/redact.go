package osb

import (
	"regexp"
	"strings"
)

// urlPassword matches a URL's user and password in text: "scheme://user:password@".
var urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:]*):[^\s/?#@]*@`)

// withoutURLPasswords replaces the password of every URL in s with "xxxxx", as
// url.URL.Redacted does. A broker's error description or message, a failed operation's
// description and a dashboard URL are stored in a record's status and shown to whoever
// may read it; a password in a URL is a credential, and no record holds credentials.
func withoutURLPasswords(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return urlPassword.ReplaceAllString(s, "${1}:xxxxx@")
}
