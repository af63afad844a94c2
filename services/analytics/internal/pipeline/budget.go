package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// One client could inflate another owner's click counts at will by visiting a link over and
// over. So each (client, link) pair gets a budget of counted clicks per window (by the time
// of the click, in fixed windows); the visits beyond it are redirected as any other, but not
// counted. A click's client is the keyed hash of its address alone (see analytics.Click),
// which a visitor cannot dodge by changing User-Agents. Like a breakdown's values, the
// budget is decided before the clicks are stored, by admitScript on a set of event ids per
// (link, client, window): a redelivered click is decided as the first time. If Redis loses
// the sets, a pair's window may count up to its budget again: bounded, and never a click
// within budget lost.

// budgetMemory is how long a window's set outlives the window: long enough for a batch
// retried after a crash, and the recovery pass, to find the decisions made.
const budgetMemory = time.Hour

// budgetScript decides, for each event id in ARGV[3..], whether the hash KEYS[1] counts it:
// 1 counted (now or before), 0 refused now, 2 refused before. The hash maps each decided
// event id to 1 or 0 and '#' to how many it counts; ARGV[1] is the budget, ARGV[2] the
// hash's lifetime in milliseconds. Refusals are kept up to refusalsKept, so that a
// redelivery is not counted as over budget twice; past that a flood costs no memory, and a
// redelivery of what it sent is counted again.
var budgetScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], '#') or '0')
local most = tonumber(ARGV[1])
local refusals = redis.call('HLEN', KEYS[1]) - n - 1
local out = {}
for i = 3, #ARGV do
  local d = redis.call('HGET', KEYS[1], ARGV[i])
  if d == '1' then
    out[#out + 1] = 1
  elseif d == '0' then
    out[#out + 1] = 2
  elseif n < most then
    redis.call('HSET', KEYS[1], ARGV[i], '1')
    n = n + 1
    out[#out + 1] = 1
  else
    if refusals < ` + strconv.Itoa(refusalsKept) + ` then
      redis.call('HSET', KEYS[1], ARGV[i], '0')
      refusals = refusals + 1
    end
    out[#out + 1] = 0
  end
end
redis.call('HSET', KEYS[1], '#', n)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return out
`)

// refusalsKept bounds the refused event ids a (link, client, window) hash keeps.
const refusalsKept = 1000

// budgetKey is the hash of the clicks decided of one client on one link in one window.
func budgetKey(linkID, client string, at time.Time, window time.Duration) string {
	start := at.UTC().Truncate(window).Unix()
	return "linkmesh:analytics:budget:" + linkID + ":" + client + "|" + strconv.FormatInt(start, 10)
}

// admitClicks returns the clicks within their (client, link) budget of budget per window,
// in their order, and how many were refused for the first time. A click without a client (no salt, or from a
// gateway of the previous release) is not held to a budget. One pipelined script call per
// key; an error must fail the batch, which is retried.
func admitClicks(ctx context.Context, rdb redis.UniversalClient, clicks []analytics.Click, budget int, window time.Duration) ([]analytics.Click, int, error) {
	index := map[string]int{}
	var keys []string
	var args [][]any
	of := make([]int, len(clicks)) // each click's key, -1 for a click without a client
	for n, c := range clicks {
		of[n] = -1
		if c.Client == "" {
			continue
		}
		key := budgetKey(c.LinkID, c.Client, c.ClickedAt, window)
		i, ok := index[key]
		if !ok {
			i = len(keys)
			index[key] = i
			keys = append(keys, key)
			args = append(args, []any{budget, (window + budgetMemory).Milliseconds()})
		}
		args[i] = append(args[i], c.EventID)
		of[n] = i
	}
	if len(keys) == 0 {
		return clicks, 0, nil
	}
	cmds, err := runAdmissions(ctx, rdb, budgetScript, keys, args)
	if err != nil {
		return nil, 0, err
	}
	// The answers of each key, in the order its event ids were sent.
	answers := make([][]int64, len(keys))
	for i := range keys {
		flags, err := cmds[i].Int64Slice()
		if err != nil || len(flags) != len(args[i])-2 {
			return nil, 0, fmt.Errorf("admit clicks to their budget: answer %v for %d clicks (%v)", flags, len(args[i])-2, err)
		}
		answers[i] = flags
	}
	kept, over := clicks[:0:0], 0
	next := make([]int, len(keys))
	for n, c := range clicks {
		i := of[n]
		if i < 0 {
			kept = append(kept, c)
			continue
		}
		switch answers[i][next[i]] {
		case 1:
			kept = append(kept, c)
		case 0:
			over++
		}
		next[i]++
	}
	return kept, over, nil
}
