// Package repomod finds the modules of the repository and the version at
// which they require one another. The release tool (internal/release) and
// the install test (internal/installtest) both start from it, so that a
// module added to go.work is released, tagged and installed without a list
// to edit.
package repomod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// UnpublishedMarker, on a line of its own in a go.mod file (as a comment),
// marks a module that is developed and tested here but never tagged nor
// offered to users; the rest of the line says why. A published module may
// not require an unpublished one (the go command needs the go.mod of every
// module in a user's graph), so a helper module below internal/ that a
// published module requires is published too.
const UnpublishedMarker = "// release: unpublished"

// Module is one module of the repository.
type Module struct {
	Path      string // module path, from its go.mod
	Dir       string // directory relative to the repository root, "." for the root, slash-separated
	Published bool   // false when its go.mod carries UnpublishedMarker
	File      *modfile.File
}

// Tag returns the git tag that publishes m at version: the version itself
// for the root module, "dir/version" for the others (the Go command's
// convention for modules in subdirectories).
func (m Module) Tag(version string) string {
	if m.Dir == "." {
		return version
	}
	return m.Dir + "/" + version
}

// Repo is the repository's set of modules.
type Repo struct {
	Root    string // absolute directory holding go.work
	Work    *modfile.WorkFile
	Modules []Module // in go.work's order
}

// Load reads go.work in root and the go.mod of every module it uses. It
// fails when a go.mod below root (outside testdata, vendor and hidden or
// _-prefixed directories) is not listed in go.work, so that no module is
// left out of the release or the install test.
func Load(root string) (*Repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	workPath := filepath.Join(root, "go.work")
	data, err := os.ReadFile(workPath)
	if err != nil {
		return nil, fmt.Errorf("repomod: %w", err)
	}
	wf, err := modfile.ParseWork(workPath, data, nil)
	if err != nil {
		return nil, fmt.Errorf("repomod: %w", err)
	}
	r := &Repo{Root: root, Work: wf}
	used := map[string]bool{}
	for _, u := range wf.Use {
		dir := path.Clean(filepath.ToSlash(u.Path))
		if filepath.IsAbs(u.Path) || dir == ".." || strings.HasPrefix(dir, "../") {
			return nil, fmt.Errorf("repomod: go.work uses %s, outside the repository", u.Path)
		}
		m, err := readModule(root, dir)
		if err != nil {
			return nil, err
		}
		used[dir] = true
		r.Modules = append(r.Modules, m)
	}
	var missing []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || name != "go.mod" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !used[rel] {
			missing = append(missing, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("repomod: %w", err)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("repomod: go.work does not use the module(s) in %s; add them with go work use", strings.Join(missing, ", "))
	}
	return r, nil
}

func readModule(root, dir string) (Module, error) {
	p := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(p)
	if err != nil {
		return Module{}, fmt.Errorf("repomod: %w", err)
	}
	f, err := modfile.Parse(p, data, nil)
	if err != nil {
		return Module{}, fmt.Errorf("repomod: %w", err)
	}
	if f.Module == nil {
		return Module{}, fmt.Errorf("repomod: %s has no module line", p)
	}
	published := true
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), UnpublishedMarker) {
			published = false
		}
	}
	return Module{Path: f.Module.Mod.Path, Dir: dir, Published: published, File: f}, nil
}

// Sibling reports whether path is the module path of one of r's modules.
func (r *Repo) Sibling(path string) bool {
	for _, m := range r.Modules {
		if m.Path == path {
			return true
		}
	}
	return false
}

// Version returns the one version at which the modules require their
// siblings. It fails when they disagree, when one requires a sibling at a
// pseudo-version or a non-canonical version, when a go.mod replaces a
// module, when a published module requires an unpublished one, when a go
// directive has a patch level (go 1.26.8 raises every user's module to
// 1.26.8: name the oldest release, 1.26.0), or when no module requires a
// sibling.
func (r *Repo) Version() (string, error) {
	var (
		version string
		where   string
		errs    []error
	)
	published := map[string]bool{}
	for _, m := range r.Modules {
		published[m.Path] = m.Published
	}
	for _, m := range r.Modules {
		if g := m.File.Go; g != nil && strings.Count(g.Version, ".") == 2 && !strings.HasSuffix(g.Version, ".0") {
			errs = append(errs, fmt.Errorf("%s/go.mod says go %s: name the oldest Go release the module needs, at .0 (a patch level raises every user's go line to it)", m.Dir, g.Version))
		}
		for _, rep := range m.File.Replace {
			errs = append(errs, fmt.Errorf("%s/go.mod replaces %s: go.mod files carry no replace (go.work does)", m.Dir, rep.Old.Path))
		}
		for _, req := range m.File.Require {
			if !r.Sibling(req.Mod.Path) {
				continue
			}
			if m.Published && !published[req.Mod.Path] {
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s, which is unpublished: users could not install %s", m.Dir, req.Mod.Path, m.Path))
			}
			v := req.Mod.Version
			switch {
			case module.IsPseudoVersion(v):
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s at the pseudo-version %s, which no proxy serves", m.Dir, req.Mod.Path, v))
			case semver.Canonical(v) != v:
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s at %s, not a release version", m.Dir, req.Mod.Path, v))
			case version == "":
				version, where = v, m.Dir+"/go.mod"
			case v != version:
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s at %s but %s requires siblings at %s", m.Dir, req.Mod.Path, v, where, version))
			}
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	if version == "" {
		return "", errors.New("repomod: no module requires a sibling, so there is no release version to read")
	}
	return version, nil
}
