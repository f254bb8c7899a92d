package jsonschema

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// checkFormat checks the few formats that are cheap to check and common in plan
// schemas. Any other format is accepted: the specification lets a validator treat a
// format it does not know as an annotation.
func checkFormat(format, s string) error {
	switch format {
	case "email":
		return checkEmail(s)
	case "uri":
		u, err := url.Parse(s)
		if err != nil {
			return errors.New("not a URI")
		}
		if !u.IsAbs() {
			return errors.New("not an absolute URI")
		}
	case "date-time":
		return checkDateTime(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return errors.New("not an IPv4 address")
		}
	case "ipv6":
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return errors.New("not an IPv6 address")
		}
	case "uuid":
		return checkUUID(s)
	}
	return nil
}

// checkEmail checks an RFC 5321 mailbox: a dot-atom or quoted local part, "@",
// and a host name or an address literal.
func checkEmail(s string) error {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return errors.New("missing @")
	}
	local, domain := s[:at], s[at+1:]
	if len(s) > 254 {
		return errors.New("more than 254 characters")
	}
	if local == "" || len(local) > 64 {
		return errors.New("the part before @ must have 1 to 64 characters")
	}
	if len(local) >= 2 && local[0] == '"' && local[len(local)-1] == '"' {
		// A quoted local part may hold almost anything.
	} else {
		if local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
			return errors.New("misplaced dot before @")
		}
		for _, r := range local {
			if !isAtext(r) && r != '.' {
				return errors.New("invalid character before @")
			}
		}
	}
	if strings.HasPrefix(domain, "[") && strings.HasSuffix(domain, "]") {
		lit := domain[1 : len(domain)-1]
		if v6, ok := strings.CutPrefix(lit, "IPv6:"); ok {
			if a, err := netip.ParseAddr(v6); err == nil && a.Is6() && a.Zone() == "" {
				return nil
			}
		} else if a, err := netip.ParseAddr(lit); err == nil && a.Is4() {
			return nil
		}
		return errors.New("invalid address literal after @")
	}
	if !isHostname(domain) {
		return errors.New("invalid domain after @")
	}
	return nil
}

func isAtext(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r)
}

// isHostname checks an RFC 1123 host name: labels of 1 to 63 letters, digits and
// hyphens, not starting or ending with a hyphen.
func isHostname(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// checkDateTime checks an RFC 3339 date-time such as 2024-02-29T23:59:60Z.
func checkDateTime(s string) error {
	bad := errors.New("want RFC 3339, for example 2024-01-31T09:30:00Z")
	if len(s) < 20 {
		return bad
	}
	if s[10] != 'T' && s[10] != 't' && s[10] != ' ' {
		return bad
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || s[4] != '-' || s[7] != '-' {
		return bad
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return errors.New("no such date")
	}
	rest := s[11:]
	h, ok1 := digits(rest[0:2])
	mi, ok2 := digits(rest[3:5])
	sec, ok3 := digits(rest[6:8])
	if !ok1 || !ok2 || !ok3 || rest[2] != ':' || rest[5] != ':' {
		return bad
	}
	rest = rest[8:]
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return bad
		}
		rest = rest[i:]
	}
	offset := 0
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return bad
		}
		offset = oh*60 + om
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return bad
	}
	if h > 23 || mi > 59 || sec > 60 {
		return errors.New("no such time")
	}
	if sec == 60 {
		// A leap second happens at 23:59:60 UTC only.
		utc := ((h*60+mi-offset)%(24*60) + 24*60) % (24 * 60)
		if utc != 23*60+59 {
			return errors.New("no such time")
		}
	}
	return nil
}

func digits(s string) (int, bool) {
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// checkUUID checks the 8-4-4-4-12 hexadecimal form of RFC 4122.
func checkUUID(s string) error {
	if len(s) != 36 {
		return errors.New("want 8-4-4-4-12 hexadecimal digits")
	}
	for i, r := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if r != '-' {
				return errors.New("want 8-4-4-4-12 hexadecimal digits")
			}
			continue
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return errors.New("want 8-4-4-4-12 hexadecimal digits")
		}
	}
	return nil
}
