package repomod

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// WriteProxy writes a file-based module proxy (the layout GOPROXY=file://
// reads) into dir with the modules of r that include accepts (all when nil)
// at version, each zip made of the module's files in the working tree: the
// files git tracks or would track (so ignored build output stays out), or,
// outside a git checkout, every file of its directory.
func (r *Repo) WriteProxy(dir, version string, include func(Module) bool) error {
	files, err := gitFiles(r.Root)
	if err != nil {
		files = nil // not a git checkout: zip the directories
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for _, m := range r.Modules {
		if include != nil && !include(m) {
			continue
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		modDir := filepath.Join(r.Root, filepath.FromSlash(m.Dir))
		gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
		if err != nil {
			return err
		}
		var zip bytes.Buffer
		mv := module.Version{Path: m.Path, Version: version}
		if files == nil {
			err = modzip.CreateFromDir(&zip, mv, modDir)
		} else {
			err = modzip.Create(&zip, mv, moduleFiles(r, m, files))
		}
		if err != nil {
			return fmt.Errorf("zip of %s: %w", m.Path, err)
		}
		for name, data := range map[string][]byte{
			"list":            []byte(version + "\n"),
			version + ".info": info,
			version + ".mod":  gomod,
			version + ".zip":  zip.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// gitFiles lists the files under root that git tracks or would track, as
// slash paths relative to root; tracked files deleted from the work tree
// are left out.
func gitFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	return files, nil
}

// moduleFiles picks the files of m out of the repository's: those under
// its directory and not under the directory of a module nested in it.
func moduleFiles(r *Repo, m Module, files []string) []modzip.File {
	owner := func(f string) string { // the directory of the module holding f
		best := "."
		for _, o := range r.Modules {
			if o.Dir != "." && strings.HasPrefix(f, o.Dir+"/") && len(o.Dir) > len(best) {
				best = o.Dir
			}
		}
		return best
	}
	var out []modzip.File
	for _, f := range files {
		if owner(f) != m.Dir {
			continue
		}
		rel := f
		if m.Dir != "." {
			rel = strings.TrimPrefix(f, m.Dir+"/")
		}
		out = append(out, zipFile{rel: rel, abs: filepath.Join(r.Root, filepath.FromSlash(f))})
	}
	return out
}

type zipFile struct{ rel, abs string }

func (f zipFile) Path() string                 { return path.Clean(f.rel) }
func (f zipFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f zipFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
