package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/queuemax/queuemax/internal/repomod"
)

// checkVersion rejects what cannot be the version of every module here.
func checkVersion(v string) error {
	switch {
	case v == "":
		return errors.New("no version: give -version vX.Y.Z (make release VERSION=vX.Y.Z)")
	case !semver.IsValid(v) || semver.Canonical(v) != v:
		return fmt.Errorf("version %q is not a canonical semantic version such as v0.5.0", v)
	case semver.Major(v) != "v0" && semver.Major(v) != "v1":
		return fmt.Errorf("version %s: a major version above v1 needs /%s at the end of every module path first", v, semver.Major(v))
	}
	return nil
}

// Prepare rewrites the go.mod files, go.work and CHANGELOG.md under root
// for version, and returns the files it changed (relative to root). A
// second call with the same version changes nothing.
func Prepare(root, version, date string) ([]string, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	r, err := repomod.Load(root)
	if err != nil {
		return nil, err
	}
	// Every file is computed before any is written, so that an error leaves
	// the tree as it was.
	var files []pending
	for _, m := range r.Modules {
		name := path.Join(m.Dir, "go.mod")
		f := m.File
		for _, rep := range f.Replace {
			if !r.Sibling(rep.Old.Path) {
				return nil, fmt.Errorf("%s replaces %s: go.mod files carry no replace; put it in go.work", name, rep.Old.Path)
			}
		}
		for _, rep := range append([]*modfile.Replace(nil), f.Replace...) {
			rep.Syntax.Before = nil // its comment goes with it
			if err := f.DropReplace(rep.Old.Path, rep.Old.Version); err != nil {
				return nil, err
			}
		}
		for _, req := range f.Require {
			if r.Sibling(req.Mod.Path) && req.Mod.Version != version {
				if err := f.AddRequire(req.Mod.Path, version); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		files = append(files, pending{name, modfile.Format(f.Syntax)})
	}

	wf := r.Work
	for _, m := range r.Modules {
		dir := "./" + m.Dir
		if m.Dir == "." {
			dir = "./"
		}
		if err := wf.AddReplace(m.Path, version, dir, ""); err != nil {
			return nil, fmt.Errorf("go.work: %w", err)
		}
	}
	for _, rep := range append([]*modfile.Replace(nil), wf.Replace...) {
		if r.Sibling(rep.Old.Path) && rep.Old.Version != version {
			if err := wf.DropReplace(rep.Old.Path, rep.Old.Version); err != nil {
				return nil, err
			}
		}
	}
	wf.Cleanup()
	files = append(files, pending{"go.work", modfile.Format(wf.Syntax)})

	clPath := filepath.Join(r.Root, "CHANGELOG.md")
	cl, err := os.ReadFile(clPath)
	if err != nil {
		return nil, err
	}
	newCL, err := Changelog(cl, version, date)
	if err != nil {
		return nil, err
	}
	files = append(files, pending{"CHANGELOG.md", newCL})

	var changed []string
	for _, f := range files {
		p := filepath.Join(r.Root, filepath.FromSlash(f.name))
		old, err := os.ReadFile(p)
		if err != nil {
			return changed, err
		}
		if bytes.Equal(old, f.data) {
			continue
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return changed, err
		}
		changed = append(changed, f.name)
	}
	return changed, nil
}

// pending is a file's new content (name relative to the root, slashed).
type pending struct {
	name string
	data []byte
}

var (
	unreleasedRE = regexp.MustCompile(`(?i)^## \[unreleased\]\s*$`)
	headingRE    = regexp.MustCompile(`^## `)
	linkRE       = regexp.MustCompile(`(?i)^\[unreleased\]:\s*(\S+?)/compare/(\S+)\.\.\.HEAD\s*$`)
)

// Changelog moves the entries under "## [Unreleased]" of a Keep a
// Changelog file to a heading "## [X.Y.Z] - date" below it, leaving
// Unreleased empty, and updates the [unreleased] comparison link if there
// is one. When the heading of version exists and Unreleased is empty it
// returns data unchanged.
func Changelog(data []byte, version, date string) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	num := strings.TrimPrefix(version, "v")
	heading := "## [" + num + "]"
	at, next := -1, len(lines)
	exists := false
	for i, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		if unreleasedRE.MatchString(t) {
			at = i
			continue
		}
		if at >= 0 && next == len(lines) && i > at && headingRE.MatchString(t) {
			next = i
		}
		if strings.HasPrefix(t, heading) {
			exists = true
		}
	}
	if at < 0 {
		return nil, errors.New("CHANGELOG.md has no \"## [Unreleased]\" heading")
	}
	entries := strings.TrimSpace(strings.Join(lines[at+1:next], ""))
	// Link reference definitions at the end belong to no section.
	if next == len(lines) {
		var kept []string
		for _, l := range strings.Split(entries, "\n") {
			if !strings.HasPrefix(l, "[") || !strings.Contains(l, "]:") {
				kept = append(kept, l)
			}
		}
		entries = strings.TrimSpace(strings.Join(kept, "\n"))
	}
	switch {
	case exists && entries == "":
		return data, nil
	case exists:
		return nil, fmt.Errorf("CHANGELOG.md already has %s and entries under Unreleased: release a new version, or move them by hand", heading)
	case entries == "":
		return nil, fmt.Errorf("CHANGELOG.md has nothing under ## [Unreleased] to release as %s", version)
	}
	out := append([]string{}, lines[:at+1]...)
	out = append(out, "\n", heading+" - "+date+"\n")
	out = append(out, lines[at+1:]...)
	for i, l := range out {
		if m := linkRE.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil {
			base, prev := m[1], m[2]
			out[i] = fmt.Sprintf("[unreleased]: %s/compare/%s...HEAD\n[%s]: %s/compare/%s...%s\n", base, version, num, base, prev, version)
			break
		}
	}
	return []byte(strings.Join(out, "")), nil
}

// Tag is the git tag of one published module.
type Tag struct {
	Name   string // such as queuemaxprom/v0.5.0
	Module string // module path
}

// Tags loads the repository under root, checks that every module requires
// its siblings at version, and returns the tags of the published modules.
func Tags(root, version string) (*repomod.Repo, []Tag, error) {
	r, err := repomod.Load(root)
	if err != nil {
		return nil, nil, err
	}
	v, err := r.Version()
	if err != nil {
		return nil, nil, err
	}
	if v != version {
		return nil, nil, fmt.Errorf("the modules require their siblings at %s, not %s", v, version)
	}
	var tags []Tag
	for _, m := range r.Modules {
		if m.Published {
			tags = append(tags, Tag{Name: m.Tag(version), Module: m.Path})
		}
	}
	return r, tags, nil
}
