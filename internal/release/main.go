// Command release prepares a release of every module of the repository at
// one version (docs/releasing.md):
//
//	go run ./internal/release -version v0.5.0 [-skip-tests] [-tag]
//
// (make release VERSION=v0.5.0 runs it). It
//
//   - sets every requirement of one module of the repository on another
//     (a sibling) to the version, in every go.mod, and drops any replace of
//     a sibling from them (any other replace is an error: go.mod files
//     carry none);
//   - rewrites the replace lines of go.work, one per module at the version,
//     so that the workspace builds before the version is on a proxy;
//   - moves the entries under "## [Unreleased]" in CHANGELOG.md to a
//     "## [x.y.z] - date" heading (nothing to do when that heading exists
//     and Unreleased is empty, so a second run changes nothing);
//   - runs go build ./... and go vet ./... in every module, then make test
//     (unless -skip-tests);
//   - prints the tag of every published module (the version for the root
//     module, dir/version for the others) and, with -tag, creates them as
//     annotated tags on HEAD, which must then be clean.
//
// With -write-proxy dir it only writes every module of the working tree, at
// the version the go.mod files require, into dir as a file-based module
// proxy, for make tidy.
//
// Modules whose go.mod carries the line "// release: unpublished" are
// rewritten like the others but not tagged.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/queuemax/queuemax/internal/repomod"
)

func main() {
	var (
		version   = flag.String("version", "", "the version to release, such as v0.5.0")
		root      = flag.String("root", ".", "the repository root (the directory of go.work)")
		skipTests = flag.Bool("skip-tests", false, "build and vet every module but do not run make test")
		skipBuild = flag.Bool("skip-build", false, "do not build, vet or test (only rewrite files and print the tags)")
		tag       = flag.Bool("tag", false, "create the tags (git tag -a) on HEAD; the work tree must be clean")
		date      = flag.String("date", time.Now().UTC().Format(time.DateOnly), "the release date for CHANGELOG.md")
		proxy     = flag.String("write-proxy", "", "only write a file-based module proxy of every module at the version the go.mod files require into `dir` (make tidy uses it)")
	)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "release: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *proxy != "" {
		if err := writeProxy(*root, *proxy); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout, options{root: *root, version: *version, date: *date,
		build: !*skipBuild, test: !*skipTests && !*skipBuild, tag: *tag}); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

type options struct {
	root, version, date string
	build, test, tag    bool
}

func run(w io.Writer, o options) error {
	changed, err := Prepare(o.root, o.version, o.date)
	if err != nil {
		return err
	}
	for _, f := range changed {
		fmt.Fprintln(w, "updated", f)
	}
	r, tags, err := Tags(o.root, o.version)
	if err != nil {
		return err
	}
	if o.build {
		for _, m := range r.Modules {
			// -o os.DevNull: a module of one main package writes no binary.
			for _, args := range [][]string{{"build", "-o", os.DevNull, "./..."}, {"vet", "./..."}} {
				if err := command(w, r.Root+"/"+m.Dir, "go", args...); err != nil {
					return err
				}
			}
		}
	}
	if o.test {
		if err := command(w, r.Root, "make", "test"); err != nil {
			return err
		}
	}
	if o.tag {
		out, err := exec.Command("git", "-C", r.Root, "status", "--porcelain").Output()
		if err != nil {
			return fmt.Errorf("git status: %w", err)
		}
		if len(strings.TrimSpace(string(out))) > 0 {
			return fmt.Errorf("the work tree has uncommitted changes; commit them (the release commit), then run with -tag again:\n%s", out)
		}
		for _, t := range tags {
			if err := command(w, r.Root, "git", "tag", "-a", t.Name, "-m", t.Module+" "+o.version); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "tags of %s:\n", o.version)
	names := make([]string, len(tags))
	for i, t := range tags {
		fmt.Fprintf(w, "  %s\n", t.Name)
		names[i] = t.Name
	}
	if !o.tag {
		fmt.Fprintf(w, "commit, then create them with -tag (or git tag -a), and push: git push origin %s\n", strings.Join(names, " "))
	} else {
		fmt.Fprintf(w, "push them: git push origin %s\n", strings.Join(names, " "))
	}
	return nil
}

// writeProxy writes every module of the repository at root, at the version
// the modules require one another, as a file-based proxy into dir.
func writeProxy(root, dir string) error {
	r, err := repomod.Load(root)
	if err != nil {
		return err
	}
	v, err := r.Version()
	if err != nil {
		return err
	}
	return r.WriteProxy(dir, v, nil)
}

func command(w io.Writer, dir, name string, args ...string) error {
	fmt.Fprintf(w, "(cd %s && %s %s)\n", dir, name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s in %s: %w", name, strings.Join(args, " "), dir, err)
	}
	return nil
}
