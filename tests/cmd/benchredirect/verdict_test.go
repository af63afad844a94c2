package main

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	cases := []struct {
		name    string
		targets []target
		line    string // String() of the first target
		pass    bool
	}{
		{"above", []target{{"ratio", 0.88, minUnrecorded, false}}, "ratio 0.88× — target ≥ 0.85×: met", true},
		{"exactly at the floor", []target{{"ratio", minUnrecorded, minUnrecorded, false}}, "ratio 0.85× — target ≥ 0.85×: met", true},
		{"just below", []target{{"ratio", 0.8496, minUnrecorded, false}}, "ratio 0.8496× — target ≥ 0.85×: MISSED", false},
		{"rounds up to the floor", []target{{"ratio", 0.849, minUnrecorded, false}}, "ratio 0.849× — target ≥ 0.85×: MISSED", false},
		{"well below", []target{{"ratio", 0.61, minUnrecorded, false}}, "ratio 0.61× — target ≥ 0.85×: MISSED", false},
		{"nothing measured", []target{{"ratio", math.NaN(), minUnrecorded, false}}, "ratio NaN× — target ≥ 0.85×: MISSED", false},
		{"zero baseline", []target{{"ratio", math.Inf(1), minUnrecorded, false}}, "ratio +Inf× — target ≥ 0.85×: MISSED", false},
		{"floor from -min-ratio", []target{{"ratio", 0.8749, 0.875, false}}, "ratio 0.87× — target ≥ 0.875×: MISSED", false},
		{"ceiling kept", []target{{"p99 ms", 1.4, 2, true}}, "p99 ms 1.40 — target ≤ 2: met", true},
		{"ceiling passed", []target{{"p99 ms", 2.01, 2, true}}, "p99 ms 2.01 — target ≤ 2: MISSED", false},
		{"one of two missed", []target{{"ratio", 0.9, minUnrecorded, false}, {"p99 ratio", 0.5, 0.7, false}}, "ratio 0.90× — target ≥ 0.85×: met", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.targets[0].String(); got != tc.line {
				t.Errorf("line %q, want %q", got, tc.line)
			}
			err := judge(tc.targets...)
			if tc.pass {
				if err != nil {
					t.Fatalf("judge = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, errTargetMissed) {
				t.Fatalf("judge = %v, want errTargetMissed", err)
			}
			for _, tg := range tc.targets {
				named := strings.Contains(err.Error(), tg.String())
				if want := !tg.met(); named != want {
					t.Errorf("%q names %s: %v, want %v", err, tg.name, named, want)
				}
			}
		})
	}
}
