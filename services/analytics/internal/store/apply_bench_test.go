package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// BenchmarkBatch stores and counts batches of clicks spread over 1,000 links, as the
// consumer does under the sustained benchmark's load, and reports each step's share.
func BenchmarkBatch(b *testing.B) {
	for _, size := range []int{1000, 5000} { // a batch of the sustained load and a full one
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			var ins, app, fin time.Duration
			n := 0
			for b.Loop() {
				clicks := make([]analytics.Click, size)
				now := time.Now()
				for i := range clicks {
					n++
					clicks[i] = click(fmt.Sprintf("b%d", n), fmt.Sprintf("L%d", n%1000), "O1", now, "GB", "example.com", fmt.Sprintf("v%d", n%1000))
				}
				batch := bson.NewObjectID()
				t0 := time.Now()
				if _, err := s.Insert(ctx, clicks, batch, now); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := s.Apply(ctx, batch); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := s.Finish(ctx, batch); err != nil {
					b.Fatal(err)
				}
				ins, app, fin = ins+t1.Sub(t0), app+t2.Sub(t1), fin+time.Since(t2)
			}
			b.ReportMetric(float64(n)/(ins+app+fin).Seconds(), "clicks/s")
			b.ReportMetric(ins.Seconds()*1000/float64(b.N), "insert-ms")
			b.ReportMetric(app.Seconds()*1000/float64(b.N), "apply-ms")
			b.ReportMetric(fin.Seconds()*1000/float64(b.N), "finish-ms")
		})
	}
}
