// Command compat-go is the Go producer/consumer of the compatibility suite, built from this one
// source against two versions of github.com/apache/rocketmq-client-go/v2: go.mod pins the current
// release, go.v211.mod pins v2.1.1, whose route parser takes the id of a broker address from
// the raw JSON text without removing quotes (so only the legacy, unquoted form is parsed right).
//
//	compat-go produce -ns A -topic T -count N [-group G]
//	compat-go consume -ns A -topic T -count N -group G [-timeout S]
//	compat-go pulse   -ns A -topic T -interval MS -duration S
//
// Every line the client logs as "the topic route info changed" is printed as
// "ROUTE <topic> <route as the client parsed it>", so a test can see which broker address the
// client put under which id.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// routeLogger prints parsed routes and warnings; the client's chatter is dropped.
type routeLogger struct{ mu sync.Mutex }

func (l *routeLogger) emit(level, msg string, fields map[string]interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if msg == "the topic route info changed" {
		fmt.Printf("ROUTE %v %v\n", fields[rlog.LogKeyTopic], fields[rlog.LogKeyValueChangedTo])
		return
	}
	if level == "warn" || level == "error" || level == "fatal" {
		b, _ := json.Marshal(fields)
		fmt.Fprintf(os.Stderr, "%s %s %s\n", level, msg, b)
	}
}

func (l *routeLogger) Debug(msg string, f map[string]interface{})   {}
func (l *routeLogger) Info(msg string, f map[string]interface{})    { l.emit("info", msg, f) }
func (l *routeLogger) Warning(msg string, f map[string]interface{}) { l.emit("warn", msg, f) }
func (l *routeLogger) Error(msg string, f map[string]interface{})   { l.emit("error", msg, f) }
func (l *routeLogger) Fatal(msg string, f map[string]interface{})   { l.emit("fatal", msg, f) }
func (l *routeLogger) Level(level string)                           {}
func (l *routeLogger) OutputPath(path string) error                 { return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compat-go produce|consume|pulse -ns ADDR -topic T ...")
		os.Exit(2)
	}
	rlog.SetLogger(&routeLogger{})
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	ns := fs.String("ns", "", "NameServer address")
	topic := fs.String("topic", "", "topic")
	count := fs.Int("count", 1000, "messages")
	group := fs.String("group", "", "group")
	timeout := fs.Int("timeout", 120, "consume timeout, seconds")
	interval := fs.Int("interval", 200, "pulse interval, ms")
	duration := fs.Int("duration", 60, "pulse duration, s")
	// accepted for a uniform command line; this client polls routes every 30 s, fixed
	_ = fs.Int("poll", 30000, "route polling period, ms (ignored)")
	_ = fs.Parse(os.Args[2:])
	if *group == "" {
		*group = "GO_" + *topic
	}
	var rc int
	switch os.Args[1] {
	case "produce":
		rc = produce(*ns, *topic, *group, *count)
	case "consume":
		rc = consume(*ns, *topic, *group, *count, *timeout)
	case "pulse":
		rc = pulse(*ns, *topic, *group, *interval, *duration)
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		rc = 2
	}
	os.Exit(rc)
}

func newProducer(ns, group string) (interface {
	Start() error
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
}, error) {
	p, err := producer.NewDefaultProducer(
		producer.WithNameServer(primitive.NamesrvAddr{ns}),
		producer.WithGroupName(group),
		producer.WithInstanceName(fmt.Sprintf("compat-%d", time.Now().UnixNano())),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(6*time.Second),
	)
	if err != nil {
		return nil, err
	}
	return p, p.Start()
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func produce(ns, topic, group string, count int) int {
	p, err := newProducer(ns, group)
	if err != nil {
		fmt.Println("PRODUCE start failed:", oneLine(err))
		return 1
	}
	ok, failed := 0, 0
	firstErr := ""
	perBroker := map[string]int{}
	retries := 0
	for i := 0; i < count; i++ {
		// a send that fails on a loaded test box is retried (up to 3 attempts), and counted
		sent := false
		for attempt := 0; attempt < 3 && !sent; attempt++ {
			if attempt > 0 {
				retries++
			}
			msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("m-%d", i)))
			r, err := p.SendSync(context.Background(), msg)
			if err == nil && r.Status == primitive.SendOK {
				sent = true
				perBroker[r.MessageQueue.BrokerName]++
			} else if firstErr == "" {
				if err != nil {
					firstErr = oneLine(err)
				} else {
					firstErr = fmt.Sprintf("status %d", r.Status)
				}
			}
		}
		if sent {
			ok++
		} else {
			failed++
		}
	}
	fmt.Printf("PRODUCE ok=%d failed=%d brokers=%s retries=%d\n", ok, failed, sortedCounts(perBroker), retries)
	if firstErr != "" {
		fmt.Println("FIRST_ERROR", firstErr)
	}
	if ok == count {
		return 0
	}
	return 1
}

func consume(ns, topic, group string, count, timeout int) int {
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer(primitive.NamesrvAddr{ns}),
		consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("compat-%d", time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		fmt.Println("CONSUME create failed:", oneLine(err))
		return 1
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	total := 0
	done := make(chan struct{})
	closed := false
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context,
		msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			total++
			seen[string(m.Body)] = true
		}
		if len(seen) >= count && !closed {
			closed = true
			close(done)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		fmt.Println("CONSUME subscribe failed:", oneLine(err))
		return 1
	}
	if err := c.Start(); err != nil {
		fmt.Println("CONSUME start failed:", oneLine(err))
		return 1
	}
	rc := 0
	select {
	case <-done:
	case <-time.After(time.Duration(timeout) * time.Second):
		rc = 1
	}
	mu.Lock()
	fmt.Printf("CONSUME distinct=%d total=%d\n", len(seen), total)
	mu.Unlock()
	return rc
}

func pulse(ns, topic, group string, interval, duration int) int {
	p, err := newProducer(ns, group)
	if err != nil {
		fmt.Println("PULSE start failed:", oneLine(err))
		return 1
	}
	until := time.Now().Add(time.Duration(duration) * time.Second)
	for i := 0; time.Now().Before(until); i++ {
		t := time.Now()
		r, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("p-%d", i))))
		switch {
		case err != nil:
			fmt.Printf("PULSE %d FAIL %s\n", t.UnixMilli(), oneLine(err))
		case r.Status == primitive.SendOK:
			fmt.Printf("PULSE %d OK %s\n", t.UnixMilli(), r.MessageQueue.BrokerName)
		default:
			fmt.Printf("PULSE %d NOTOK %s\n", t.UnixMilli(), r.MessageQueue.BrokerName)
		}
		if d := time.Duration(interval)*time.Millisecond - time.Since(t); d > 0 {
			time.Sleep(d)
		}
	}
	return 0
}
