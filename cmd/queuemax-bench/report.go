package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one run measured; it is also the JSON output.
type Report struct {
	Machine Machine `json:"machine"`
	// Store is "sqlite" or "postgres"; Server describes the PostgreSQL
	// server (version, synchronous_commit) of a postgres run.
	Store    string   `json:"store"`
	Server   string   `json:"server,omitempty"`
	Scale    float64  `json:"scale"`
	Started  string   `json:"started"`
	Seconds  float64  `json:"seconds"`
	Results  []Result `json:"results"`
	Failures []string `json:"failures"` // verification failures; any makes the exit status 1
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
}

// Result is one measured figure.
type Result struct {
	Scenario string  `json:"scenario"`
	Metric   string  `json:"metric"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	// Floor is the same-run floor figure this one is compared with, and
	// Ratio is Value/Floor; both are zero when there is no comparison.
	Floor float64 `json:"floor,omitempty"`
	Ratio float64 `json:"ratio,omitempty"`
	// Target is the goal in words and Met whether Value reached it; Met is
	// absent for figures without a target.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	Note   string `json:"note,omitempty"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func (r *Report) print(w io.Writer) {
	fmt.Fprintf(w, "queuemax-bench: %d CPUs (%s), %s, %s, scale %g, %.0fs\n\n", r.Machine.CPUs, r.Machine.CPUModel,
		r.Machine.GoVersion, r.storeLine(), r.Scale, r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmetric\tvalue\tunit\tfloor\tratio\ttarget\tstatus\t")
	for _, res := range r.Results {
		floor, ratio := "", ""
		if res.Floor > 0 {
			floor = fmtNum(res.Floor)
			ratio = fmt.Sprintf("%.0f%%", res.Ratio*100)
		}
		status := ""
		if res.Met != nil {
			status = "met"
			if !*res.Met {
				status = "MISSED"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", res.Scenario, res.Metric, fmtNum(res.Value), res.Unit,
			floor, ratio, res.Target, status)
	}
	tw.Flush()
	for _, res := range r.Results {
		if res.Note != "" {
			fmt.Fprintf(w, "  %s %s: %s\n", res.Scenario, res.Metric, res.Note)
		}
	}
	if len(r.Failures) == 0 {
		fmt.Fprintln(w, "\nexactly-once: verified in every scenario (0 duplicates, 0 losses)")
	}
}

// storeLine names the store of the run.
func (r *Report) storeLine() string {
	if r.Server != "" {
		return r.Store + " (" + r.Server + ")"
	}
	return r.Store
}

func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return commas(int64(v + 0.5))
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// add records a figure without a target.
func (r *Report) add(scenario, metric string, v float64, unit string) *Result {
	r.Results = append(r.Results, Result{Scenario: scenario, Metric: metric, Value: v, Unit: unit})
	return &r.Results[len(r.Results)-1]
}

// vsFloor sets the comparison with a floor figure.
func (res *Result) vsFloor(floor float64) *Result {
	if floor > 0 {
		res.Floor = floor
		res.Ratio = res.Value / floor
	}
	return res
}

// target sets the goal and whether it was met.
func (res *Result) target(goal string, met bool) *Result {
	res.Target = goal
	res.Met = &met
	return res
}

func (res *Result) note(format string, args ...any) *Result {
	res.Note = fmt.Sprintf(format, args...)
	return res
}

func (r *Report) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// printMarkdown writes the results as a Markdown table, notes below it.
func (r *Report) printMarkdown(w io.Writer) {
	fmt.Fprintf(w, "%d CPUs (%s), %s, %s, scale %g, %.0fs\n\n", r.Machine.CPUs, r.Machine.CPUModel, r.Machine.GoVersion, r.storeLine(), r.Scale, r.Seconds)
	fmt.Fprintln(w, "| scenario | metric | value | unit | floor | ratio | target | status |")
	fmt.Fprintln(w, "|---|---|--:|---|--:|--:|---|---|")
	for _, res := range r.Results {
		floor, ratio := "", ""
		if res.Floor > 0 {
			floor = fmtNum(res.Floor)
			ratio = fmt.Sprintf("%.0f%%", res.Ratio*100)
		}
		status := ""
		if res.Met != nil {
			status = "met"
			if !*res.Met {
				status = "**missed**"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", res.Scenario, res.Metric, fmtNum(res.Value), res.Unit,
			floor, ratio, res.Target, status)
	}
	fmt.Fprintln(w)
	for _, res := range r.Results {
		if res.Note != "" {
			fmt.Fprintf(w, "- %s, %s: %s\n", res.Scenario, res.Metric, res.Note)
		}
	}
}
