package drills

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// report is what a drill measured, logged as one line starting with REPORT when the drill
// ends, whether it passed or not: the answers clients got, by what was asked and status;
// the visits answered 302 against the clicks stored for them; how long something was down
// and how long it took to answer again; and figures of the drill's own.
type report struct {
	mu      sync.Mutex
	Drill   string                      `json:"drill"`
	Answers map[string]map[string]int64 `json:"answers,omitempty"`
	Clicks  map[string]clickCount       `json:"clicks,omitempty"`
	Down    map[string]string           `json:"down,omitempty"`
	Recover map[string]string           `json:"recover,omitempty"`
	Figures map[string]any              `json:"figures,omitempty"`
}

// clickCount is what became of the visits answered 302 to one short code.
type clickCount struct {
	Answered int64 `json:"answered"`
	Stored   int64 `json:"stored"`
}

// noAnswer is the status under which a request that got no answer at all is counted.
const noAnswer = "no answer"

// newReport starts t's report, logged when t ends.
func newReport(t *testing.T) *report {
	r := &report{Drill: t.Name(), Answers: map[string]map[string]int64{}, Clicks: map[string]clickCount{},
		Down: map[string]string{}, Recover: map[string]string{}, Figures: map[string]any{}}
	t.Cleanup(func() { t.Logf("REPORT %s", r) })
	return r
}

// send is the package's send, its answer counted under what.
func (r *report) send(t *testing.T, what, base, method, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	status, answer := send(t, base, method, path, body, header)
	r.answer(what, status)
	return status, answer
}

// answer counts one answer of status (0: none) to a request of kind what.
func (r *report) answer(what string, status int) {
	key := noAnswer
	if status != 0 {
		key = strconv.Itoa(status)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Answers[what] == nil {
		r.Answers[what] = map[string]int64{}
	}
	r.Answers[what][key]++
}

// count is how many requests of kind what were answered status.
func (r *report) count(what string, status int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Answers[what][strconv.Itoa(status)]
}

// other is how many requests of kind what were answered anything but status, or not at
// all, and how: "503×2 no answer×1".
func (r *report) other(what string, status int) (int64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	var how []string
	for k, v := range r.Answers[what] {
		if k != strconv.Itoa(status) {
			n += v
			how = append(how, fmt.Sprintf("%s×%d", k, v))
		}
	}
	sort.Strings(how)
	return n, strings.Join(how, " ")
}

// clicks records what became of the visits answered 302 to what.
func (r *report) clicks(what string, answered, stored int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Clicks[what] = clickCount{Answered: answered, Stored: stored}
}

// down records how long what was away.
func (r *report) down(what string, d time.Duration) { r.duration(r.Down, what, d) }

// recovered records how long what took to answer again.
func (r *report) recovered(what string, d time.Duration) { r.duration(r.Recover, what, d) }

func (r *report) duration(m map[string]string, what string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m[what] = d.Round(time.Millisecond).String()
}

// figure records a figure of the drill's own; durations are rounded to milliseconds.
func (r *report) figure(name string, v any) {
	if d, ok := v.(time.Duration); ok {
		v = d.Round(time.Millisecond).String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Figures[name] = v
}

// String is the report as one line of JSON, its keys sorted.
func (r *report) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Sprintf("%q: %v", r.Drill, err)
	}
	return string(b)
}
