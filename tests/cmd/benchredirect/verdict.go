package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The shares of the bare Fiber handler's throughput the full stack must reach, in the same
// run. Without recording (no User-Agent) the redirect's own work (the cache, request id,
// metrics, the handover to the recorder) may cost at most 15 % in every round. With every
// visit recorded, enriching it and writing it to the stream share the gateway's core, and
// may cost 30 % at the median and 35 % in any round.
const (
	minUnrecorded     = 0.85
	minMedianRecorded = 0.70
	minRecorded       = 0.65
)

// errTargetMissed makes the process exit non-zero, so a regression fails the run that shows it
// instead of passing unnoticed in a log.
var errTargetMissed = errors.New("benchmark target missed")

// target is a measured figure and the floor it must reach (or, with atMost, the ceiling it
// must stay under).
type target struct {
	name   string
	got    float64
	min    float64
	atMost bool
}

// met reports whether the figure reached its floor (stayed under its ceiling). NaN and
// +Inf, which a zero baseline produces, never do: a run whose baseline measured nothing has
// not shown anything.
func (t target) met() bool {
	if math.IsInf(t.got, 0) || math.IsNaN(t.got) {
		return false
	}
	if t.atMost {
		return t.got <= t.min
	}
	return t.got >= t.min
}

// String renders the figure with its verdict, so nobody has to compare the numbers by eye.
func (t target) String() string {
	verdict := "met"
	if !t.met() {
		verdict = "MISSED"
	}
	if t.atMost {
		return fmt.Sprintf("%s %s — target ≤ %s: %s", t.name, strconv.FormatFloat(t.got, 'f', 2, 64), strconv.FormatFloat(t.min, 'f', -1, 64), verdict)
	}
	return fmt.Sprintf("%s %s× — target ≥ %s×: %s", t.name, t.figure(), strconv.FormatFloat(t.min, 'f', -1, 64), verdict)
}

// figure prints got to two decimals, or more when rounding would lift a miss to the floor: a
// line reading "0.85× — target ≥ 0.85×: MISSED" would look like a bug in the verdict.
func (t target) figure() string {
	for prec := 2; ; prec++ {
		s := strconv.FormatFloat(t.got, 'f', prec, 64)
		if shown, _ := strconv.ParseFloat(s, 64); t.met() || shown < t.min || prec == 6 {
			return s
		}
	}
}

// judge returns an error wrapping errTargetMissed and naming every missed target, or nil when
// all were met.
func judge(targets ...target) error {
	var missed []string
	for _, t := range targets {
		if !t.met() {
			missed = append(missed, t.String())
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("%w: %s", errTargetMissed, strings.Join(missed, "; "))
	}
	return nil
}
