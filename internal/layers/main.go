// Command layers lists the imports that run from a lower layer of the
// repository back up into a higher one, and counts them. The layers are
// the table below (docs/architecture.md explains them); run it from the
// repository's root, through go.work:
//
//	go run ./internal/layers        # the layers of docs/architecture.md
//	go run ./internal/layers -dir   # by folder: internal/ < runtime/ < the rest
//
// It runs go list over every package of every module of the workspace
// and counts each (importing package, imported package) pair once, the
// imports of a package's own tests included (an external _test package
// is a program on top of the layers, and is not counted). The exit status is 0; -max n makes it 1 when
// more than n edges run back up.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

const module = "github.com/queuemax/queuemax"

// layers are the layers, lowest first: a package is in the layer of the
// longest prefix (a path below the module, "" for the root package) that
// names it or a folder above it.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"leaf types and pure helpers", []string{"/queuemaxtype", "/internal/clock", "/internal/codec", "/internal/cputime",
		"/internal/suggest", "/internal/repomod", "/internal/pgtest", "/internal/limitcheck", "/runtime/shard"}},
	{"formats over the leaf types", []string{"/internal/jsonl", "/internal/jsonview"}},
	{"the store contract", []string{"/runtime/store"}},
	{"engine parts and stores", []string{"/runtime/breaker", "/runtime/ratelimit", "/runtime/scale", "/runtime/enqueue", "/runtime/admission",
		"/runtime/store/sqlitestore", "/runtime/store/storetest"}},
	{"the engine", []string{"/runtime/engine"}},
	{"services over the engine", []string{"/runtime/schedule"}},
	{"the root package (the API)", []string{""}},
	{"integrations, stores of their own, generator", []string{"/queuemaxpg", "/queuemaxenv", "/queuemaxhttp",
		"/queuemaxtest", "/queuemaxotel", "/queuemaxprom", "/annotations", "/gen", "/cli"}},
	{"programs, examples and test harnesses", []string{"/cmd", "/examples", "/internal/pgfaults",
		"/internal/installtest", "/internal/release", "/internal/layers", "/queuemaxhttp/browsertest"}},
}

// layerOf returns the layer index of package path p (below the module),
// or -1 for a package no rule names.
func layerOf(p string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, pre := range l.prefixes {
			if (p == pre || pre == "" && p == "" || pre != "" && strings.HasPrefix(p, pre+"/")) && len(pre) > bestLen {
				best, bestLen = i, len(pre)
			}
		}
	}
	return best
}

// dirLayerOf is the folder model: internal/ below runtime/ below the rest.
func dirLayerOf(p string) int {
	switch {
	case strings.HasPrefix(p, "/internal/"):
		return 0
	case strings.HasPrefix(p, "/runtime/"):
		return 1
	}
	return 2
}

func main() {
	dir := flag.Bool("dir", false, "count by folder (internal/ < runtime/ < the rest) instead of the layer table")
	maxEdges := flag.Int("max", -1, "exit 1 when more edges than this run back up (-1: never)")
	flag.Parse()
	out, err := exec.Command("go", "list", "-e", "-f",
		"{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}}",
		module+"/...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers: go list:", err)
		os.Exit(2)
	}
	layer := layerOf
	if *dir {
		layer = dirLayerOf
	}
	var edges, unknown []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.Contains(fields[0], "/testdata/") {
			continue
		}
		from := strings.TrimPrefix(fields[0], module)
		lf := layer(from)
		if lf < 0 {
			unknown = append(unknown, from)
			continue
		}
		seen := map[string]bool{}
		for _, imp := range fields[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") || seen[imp] {
				continue
			}
			seen[imp] = true
			to := strings.TrimPrefix(imp, module)
			if lt := layer(to); lt > lf && to != from {
				edges = append(edges, fmt.Sprintf("%s -> %s", show(from), show(to)))
			}
		}
	}
	slices.Sort(edges)
	for _, e := range edges {
		fmt.Println(e)
	}
	for _, u := range unknown {
		fmt.Fprintf(os.Stderr, "layers: %s is in no layer: add it to the table\n", show(u))
	}
	fmt.Printf("%d imports run from a lower layer back up\n", len(edges))
	if *maxEdges >= 0 && len(edges) > *maxEdges || len(unknown) > 0 {
		os.Exit(1)
	}
}

func show(p string) string {
	if p == "" {
		return "queuemax"
	}
	return strings.TrimPrefix(p, "/")
}
