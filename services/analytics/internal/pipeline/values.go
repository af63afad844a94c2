package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// Every distinct referrer, browser and OS a link's clicks carry becomes a field of its daily
// and monthly rollups, which the store reads and rewrites whole. Referer and User-Agent are
// whatever a visitor sends: made-up values by the thousand would make one link's rollups
// slow to update and to answer, and past the 16 MiB document limit impossible to write, which
// would stall every link's counts. So a link admits at most analytics.MaxValues distinct
// values per breakdown and calendar month, first come first admitted; a click with a later
// new value records analytics.Other instead, in its raw record too, so the rollups and every
// rebuild from raw records agree. Admission is decided before the clicks are stored, by one
// script per (link, month, breakdown) that only ever adds to its set: a redelivered click is
// decided as the first time. If Redis loses the sets, a link may admit up to as many new
// values again that month: bounded, and no click is lost.

// valuesMemory outlives a month and the late clicks of it.
const valuesMemory = 40 * 24 * time.Hour

// valuesKey is the set of the values a link admitted in a month for one breakdown.
func valuesKey(field, linkID string, at time.Time) string {
	return "linkmesh:analytics:values:" + field + ":" + linkID + "|" + at.UTC().Format("2006-01")
}

// admitScript answers, for each value in ARGV[3..], 1 if the set KEYS[1] holds it or has
// room for it (then it is added), 0 otherwise. ARGV[1] is the most values, ARGV[2] the set's
// lifetime in milliseconds.
var admitScript = redis.NewScript(`
local n = redis.call('SCARD', KEYS[1])
local most = tonumber(ARGV[1])
local out = {}
for i = 3, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    out[#out + 1] = 1
  elseif n < most then
    redis.call('SADD', KEYS[1], ARGV[i])
    n = n + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return out
`)

// decisionsKept bounds the decisions a consumer remembers; past it, it forgets them all.
const decisionsKept = 200_000

// decisions remembers admissions already decided: a set only grows, so a value admitted stays
// admitted and a value refused stays refused for the rest of the month (short of Redis
// losing the set), and a link's usual values need no call at all.
type decisions struct {
	mu   sync.Mutex
	seen map[string]bool // key + "\x00" + value → admitted
}

func (d *decisions) get(key, value string) (admitted, known bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	admitted, known = d.seen[key+"\x00"+value]
	return admitted, known
}

func (d *decisions) put(key, value string, admitted bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil || len(d.seen) >= decisionsKept {
		d.seen = map[string]bool{}
	}
	d.seen[key+"\x00"+value] = admitted
}

// breakdownFields are the breakdowns whose values a visitor controls, with their names in
// Redis keys; country and device type come from fixed sets.
var breakdownFields = []struct {
	name string
	of   func(*analytics.Click) *string
}{
	{"referrer", func(c *analytics.Click) *string { return &c.Referrer }},
	{"browser", func(c *analytics.Click) *string { return &c.Browser }},
	{"os", func(c *analytics.Click) *string { return &c.OS }},
}

// admitValues replaces each click's referrer, browser and OS that its link may not add this
// month by analytics.Other: one pipelined script call per (link, month, breakdown) of the
// batch. An error leaves the clicks unchanged and must fail the batch, which is retried.
func admitValues(ctx context.Context, rdb redis.UniversalClient, known *decisions, clicks []analytics.Click) error {
	// ask is one key's script call: the values asked, then whether each was admitted.
	type ask struct {
		key      string
		args     []any // the script's arguments: the bound, the lifetime, then the values
		index    map[string]int
		admitted []int64
	}
	// pending is a click's value that waits for its key's answer.
	type pending struct {
		value *string
		ask   *ask
	}
	var asks []*ask
	var waiting []pending
	byKey := map[string]*ask{}
	for i := range clicks {
		for _, f := range breakdownFields {
			p := f.of(&clicks[i])
			if fixedValue(*p) {
				continue
			}
			key := valuesKey(f.name, clicks[i].LinkID, clicks[i].ClickedAt)
			if admitted, ok := known.get(key, *p); ok {
				if !admitted {
					*p = analytics.Other
				}
				continue
			}
			a := byKey[key]
			if a == nil {
				a = &ask{key: key, args: []any{analytics.MaxValues, valuesMemory.Milliseconds()}, index: map[string]int{}}
				byKey[key] = a
				asks = append(asks, a)
			}
			if _, ok := a.index[*p]; !ok {
				a.index[*p] = len(a.args)
				a.args = append(a.args, *p)
			}
			waiting = append(waiting, pending{value: p, ask: a})
		}
	}
	if len(asks) == 0 {
		return nil
	}
	keys, args := make([]string, len(asks)), make([][]any, len(asks))
	for i, a := range asks {
		keys[i], args[i] = a.key, a.args
	}
	cmds, err := runAdmissions(ctx, rdb, admitScript, keys, args)
	if err != nil {
		return err
	}
	for i, a := range asks {
		flags, err := cmds[i].Int64Slice()
		if err != nil || len(flags) != len(a.args)-2 {
			return fmt.Errorf("admit breakdown values: answer %v for %d values (%v)", flags, len(a.args)-2, err)
		}
		a.admitted = flags
		for k, v := range a.args[2:] {
			known.put(a.key, v.(string), flags[k] == 1)
		}
	}
	for _, w := range waiting {
		if w.ask.admitted[w.ask.index[*w.value]-2] == 0 {
			*w.value = analytics.Other
		}
	}
	return nil
}

// runAdmissions runs script on each key with its arguments, in one pipeline. A node that has
// not cached the script yet answers NOSCRIPT; then the pipeline runs again sending the
// script itself.
func runAdmissions(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, keys []string, args [][]any) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(keys))
	run := func(send func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) error {
		pipe := rdb.Pipeline()
		for i, key := range keys {
			cmds[i] = send(ctx, pipe, []string{key}, args[i]...)
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	err := run(script.EvalSha)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		err = run(script.Eval)
	}
	if err != nil {
		return nil, fmt.Errorf("admission script: %w", err)
	}
	return cmds, nil
}

// fixedValue is a value every link records whatever it met before: "direct", "Unknown" and
// Other itself, which a flood of made-up values must not push out.
func fixedValue(v string) bool {
	return v == analytics.Other || v == analytics.Direct || v == analytics.Unknown
}
