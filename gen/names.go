package gen

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// initialisms are the words that Go spells in one case (golint's list,
// trimmed to the ones parameter names use).
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CPU": true, "CSS": true, "CSV": true, "DB": true, "DNS": true,
	"EOF": true, "GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true, "IP": true, "JSON": true,
	"SMTP": true, "SQL": true, "SSH": true, "TCP": true, "TLS": true, "TTL": true, "UDP": true, "UI": true,
	"UID": true, "URI": true, "URL": true, "UTF8": true, "UUID": true, "XML": true,
}

// words splits a Go identifier into words at underscores and case changes:
// "userID" → [user ID], "HTTPServer" → [HTTP Server], "page_size" → [page size].
func words(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, "_") {
		runes := []rune(part)
		start := 0
		for i := 1; i < len(runes); i++ {
			prev, cur := runes[i-1], runes[i]
			next := rune(0)
			if i+1 < len(runes) {
				next = runes[i+1]
			}
			split := (unicode.IsLower(prev) || unicode.IsDigit(prev)) && unicode.IsUpper(cur) ||
				unicode.IsUpper(prev) && unicode.IsUpper(cur) && unicode.IsLower(next)
			if split {
				out = append(out, string(runes[start:i]))
				start = i
			}
		}
		if start < len(runes) {
			out = append(out, string(runes[start:]))
		}
	}
	return out
}

// exportedName turns a parameter name into a struct field name:
// "to" → "To", "userID" → "UserID", "url" → "URL", "page_size" → "PageSize".
func exportedName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up := strings.ToUpper(w); initialisms[up] {
			b.WriteString(up)
			continue
		}
		r, n := utf8.DecodeRuneInString(w)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(w[n:])
	}
	name := b.String()
	if r, _ := utf8.DecodeRuneInString(name); !unicode.IsUpper(r) {
		// A name such as "_x9" or "ñ" whose first letter has no upper case.
		name = "X" + name
	}
	return name
}

// snakeName turns a parameter name into a JSON key: "userID" → "user_id".
func snakeName(s string) string {
	ws := words(s)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return strings.Join(ws, "_")
}

// unexportedName turns an exported function name into the prefix of
// unexported generated names: "SendEmail" → "sendEmail", "HTTPGet" →
// "httpGet", "URL" → "url".
func unexportedName(s string) string {
	runes := []rune(s)
	n := 0
	for n < len(runes) && unicode.IsUpper(runes[n]) {
		n++
	}
	switch {
	case n == 0:
		return s
	case n == 1 || n == len(runes):
		// "SendEmail" → "sendEmail"; "URL" → "url".
	case unicode.IsLower(runes[n]):
		// "HTTPGet": keep the G of Get.
		n--
	}
	for i := range n {
		runes[i] = unicode.ToLower(runes[i])
	}
	return string(runes)
}
