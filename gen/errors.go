package gen

import (
	"go/scanner"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// errorList collects problems with absolute positions. It is a thin layer
// over scanner.ErrorList, whose Error, Sort and PrintError already read
// like compiler output.
type errorList struct {
	list scanner.ErrorList
	seen map[string]bool
}

// add records msg at pos, dropping exact duplicates.
func (l *errorList) add(pos token.Position, msg string) {
	key := pos.String() + "\x00" + msg
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[key] {
		return
	}
	l.seen[key] = true
	l.list.Add(pos, msg)
}

// relative returns the errors with file names relative to dir (when they
// are inside it), sorted by file, line, column and message.
func relative(list scanner.ErrorList, dir string) scanner.ErrorList {
	out := make(scanner.ErrorList, 0, len(list))
	for _, e := range list {
		c := *e
		if c.Pos.Filename != "" && filepath.IsAbs(c.Pos.Filename) {
			if rel, err := filepath.Rel(dir, c.Pos.Filename); err == nil && !strings.HasPrefix(rel, "..") {
				c.Pos.Filename = filepath.ToSlash(rel)
			}
		}
		out = append(out, &c)
	}
	out.Sort()
	return out
}

// parsePos parses the "file:line:col" positions of packages.Error. It
// returns the zero Position for "" and "-".
func parsePos(s string) token.Position {
	var p token.Position
	if s == "" || s == "-" {
		return p
	}
	rest := s
	nums := []int{}
	for range 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			break
		}
		nums = append(nums, n)
		rest = rest[:i]
	}
	p.Filename = rest
	switch len(nums) {
	case 2:
		p.Line, p.Column = nums[1], nums[0]
	case 1:
		p.Line = nums[0]
	}
	return p
}
