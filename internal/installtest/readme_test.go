package installtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// installLines returns the go commands of the "## Install" section of the
// README at root (the lines of its ```sh blocks that start with "go ",
// without trailing # comments), and the section's text.
func installLines(root string) (lines []string, section string, err error) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, "", err
	}
	in, code := false, false
	var sec strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "## ") {
			in = strings.TrimSpace(l) == "## Install"
			continue
		}
		if !in {
			continue
		}
		sec.WriteString(l + "\n")
		if strings.HasPrefix(l, "```") {
			code = !code && strings.TrimPrefix(l, "```") == "sh"
			continue
		}
		if code && strings.HasPrefix(l, "go ") {
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(lines) == 0 {
		return nil, "", fmt.Errorf("README.md has no go commands in a ```sh block of its \"## Install\" section")
	}
	return lines, sec.String(), nil
}

// commandKey names a go command by what it does: "go get -tool" and the
// module or package path, without its @version.
func commandKey(line string) string {
	var verb, target []string
	for _, f := range strings.Fields(line) {
		if strings.Contains(f, "@") {
			target = append(target, f[:strings.Index(f, "@")])
		} else {
			verb = append(verb, f)
		}
	}
	return strings.Join(verb, " ") + " " + strings.Join(target, " ")
}

var docCommandRE = regexp.MustCompile("go (?:get|install)(?: -tool)? github\\.com/queuemax/queuemax[^\\s`)]*@[^\\s`)]+")

// TestDocs_InstallCommands checks that the commands docs/operations.md
// and docs/dashboard.md give to install queuemax are those of the
// README's Install section, and that the section names the Go version the
// core's go.mod needs.
func TestDocs_InstallCommands(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	lines, section, err := installLines(root)
	if err != nil {
		t.Fatal(err)
	}
	readme := map[string]bool{}
	for _, l := range lines {
		readme[l] = true
	}
	for _, doc := range []string{"docs/operations.md", "docs/dashboard.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		found := docCommandRE.FindAllString(string(data), -1)
		if len(found) == 0 {
			t.Errorf("%s gives no go get/go install command with a version", doc)
		}
		for _, c := range found {
			if !readme[c] {
				t.Errorf("%s gives %q, which is not a command of the README's Install section %q", doc, c, lines)
			}
		}
	}
	goVersion := coreGoVersion(t, root)
	if want := "Go " + goVersion; !strings.Contains(section, want) {
		t.Errorf("README's Install section does not name %q, the go directive of go.mod", want)
	}
}
