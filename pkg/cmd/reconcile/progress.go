package reconcile

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/reconcile"
)

// Progress shows what a run by hand does while it does it, from the run's
// reconcile.Observer hooks: on a terminal, one line redrawn in place (records
// finished, in progress and waiting, the record being worked on and its step, the time
// elapsed), cleared before the summary; otherwise, timestamped log lines, one per
// record's outcome, and with verbose one per step and per wait too.
type Progress struct {
	w       io.Writer
	live    bool
	verbose bool
	now     func() time.Time
	start   time.Time
	width   func() int

	mu       sync.Mutex
	total    int
	finished int
	running  map[reconcile.Ref]string    // record -> the step under way
	order    []reconcile.Ref             // running records, the latest started last
	waiting  map[reconcile.Ref]time.Time // record -> when its next step is due
	note     string                      // e.g. the interruption
	drawn    bool
	stopped  bool
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewProgress reports to w: live when live (w is a terminal), else as log lines;
// verbose also reports each step. Stop ends it.
func NewProgress(w io.Writer, live, verbose bool) *Progress {
	p := &Progress{
		w: w, live: live, verbose: verbose, now: time.Now, width: widthOf(w),
		running: map[reconcile.Ref]string{}, waiting: map[reconcile.Ref]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	p.start = p.now()
	if !live {
		close(p.done)
		return p
	}
	// The elapsed time moves on while nothing happens: redraw twice a second.
	go func() {
		defer close(p.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

// widthOf is the width of the terminal w is, 80 when it cannot be told.
func widthOf(w io.Writer) func() int {
	return func() int {
		if f, ok := w.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
		}
		return 80
	}
}

// RecordQueued implements reconcile.Observer.
func (p *Progress) RecordQueued(reconcile.Ref) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	p.draw()
}

// StepStarted implements reconcile.Observer.
func (p *Progress) StepStarted(ref reconcile.Ref, action string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, ref)
	p.notRunning(ref)
	p.running[ref] = action
	p.order = append(p.order, ref)
	if p.verbose {
		p.log("%s: %s", ref, action)
	}
	p.draw()
}

// StepScheduled implements reconcile.Observer.
func (p *Progress) StepScheduled(ref reconcile.Ref, at time.Time, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notRunning(ref)
	p.waiting[ref] = at
	if p.verbose {
		when := "until the records it waits for are done"
		if !at.IsZero() {
			when = "until " + at.UTC().Format(time.RFC3339)
		}
		p.log("%s: waiting %s: %s", ref, when, oneLine(why))
	}
	p.draw()
}

// RecordFinished implements reconcile.Observer.
func (p *Progress) RecordFinished(it reconcile.Item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ref := reconcile.RefOf(it)
	p.notRunning(ref)
	delete(p.waiting, ref)
	p.finished++
	// On a terminal the summary's table says how each record ended; the verbose log
	// says it as it happens.
	if !p.live || p.verbose {
		line := fmt.Sprintf("%s: %s", ref, it.OutcomeText())
		if it.Detail != "" {
			line += ": " + oneLine(it.Detail)
		}
		p.log("%s", line)
	}
	p.draw()
}

// Interrupted says the run was interrupted and is finishing the calls under way.
func (p *Progress) Interrupted() {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := "interrupted: finishing the broker calls under way; Ctrl-C again exits at once"
	if p.live {
		p.note = msg
		p.draw()
		return
	}
	p.log("%s", msg)
}

// Stop ends the progress: a live line is cleared, for the summary to follow.
func (p *Progress) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.stopped = true
}

func (p *Progress) notRunning(ref reconcile.Ref) {
	if _, ok := p.running[ref]; !ok {
		return
	}
	delete(p.running, ref)
	for i, r := range p.order {
		if r == ref {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}

// log writes one line: above the live line on a terminal, timestamped otherwise.
func (p *Progress) log(format string, args ...any) {
	if p.stopped {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if p.live {
		p.clear()
		fmt.Fprintf(p.w, "%s\n", msg)
		return
	}
	fmt.Fprintf(p.w, "%s %s\n", p.now().UTC().Format(time.RFC3339), msg)
}

// clear erases the live line.
func (p *Progress) clear() {
	if p.live && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// draw redraws the live line.
func (p *Progress) draw() {
	if !p.live || p.stopped {
		return
	}
	line := p.line()
	if w := p.width() - 1; w > 0 && utf8.RuneCountInString(line) > w {
		r := []rune(line)
		line = string(r[:max(w-3, 0)]) + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.drawn = true
}

// line is the live line (p.mu held), e.g.
// "reconcile 12s: 3/10 finished, 1 in progress, 6 waiting; instance dev/db: provision".
func (p *Progress) line() string {
	elapsed := p.now().Sub(p.start).Truncate(time.Second)
	inProgress := len(p.running)
	waiting := max(p.total-p.finished-inProgress, 0)
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile %s: ", elapsed)
	if p.note != "" {
		// First: the end of a long line may be cut to the terminal's width.
		b.WriteString(p.note + "; ")
	}
	fmt.Fprintf(&b, "%d/%d finished, %d in progress, %d waiting", p.finished, p.total, inProgress, waiting)
	if n := len(p.order); n > 0 {
		ref := p.order[n-1]
		fmt.Fprintf(&b, "; %s: %s", ref, p.running[ref])
	} else if ref, at, ok := p.soonest(); ok {
		fmt.Fprintf(&b, "; next: %s", ref)
		if !at.IsZero() {
			fmt.Fprintf(&b, " in %s", max(at.Sub(p.now()), 0).Round(time.Second))
		}
	}
	return b.String()
}

// soonest is the waiting record due first.
func (p *Progress) soonest() (reconcile.Ref, time.Time, bool) {
	var best reconcile.Ref
	var bestAt time.Time
	found := false
	for ref, at := range p.waiting {
		if at.IsZero() {
			continue
		}
		if !found || at.Before(bestAt) || at.Equal(bestAt) && ref.String() < best.String() {
			best, bestAt, found = ref, at, true
		}
	}
	return best, bestAt, found
}
