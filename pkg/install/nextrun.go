package install

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NextRun is the first time after after that the cron schedule (five fields: minute hour
// day-of-month month day-of-week, of numbers, "*", ranges "a-b", lists "a,b" and steps
// "/n"; or a descriptor such as "@hourly") fires, in after's location, looking at most
// eight days ahead; ok is false for a schedule it cannot read (names of months or days)
// or that does not fire in that time.
func NextRun(schedule string, after time.Time) (next time.Time, ok bool) {
	if m, isMacro := cronMacroFields[strings.TrimSpace(schedule)]; isMacro {
		schedule = m
	}
	fields := strings.Fields(schedule)
	if len(fields) != 5 {
		return time.Time{}, false
	}
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	var sets [5]map[int]bool
	for i, f := range fields {
		s, err := cronSet(f, bounds[i][0], bounds[i][1])
		if err != nil {
			return time.Time{}, false
		}
		sets[i] = s
	}
	if sets[4][7] {
		sets[4][0] = true
	}
	// Day of month and day of week: either matches when both are restricted.
	domAny, dowAny := fields[2] == "*", fields[4] == "*"
	t := after.Truncate(time.Minute).Add(time.Minute)
	for end := after.Add(8 * 24 * time.Hour); !t.After(end); t = t.Add(time.Minute) {
		if !sets[0][t.Minute()] || !sets[1][t.Hour()] || !sets[3][int(t.Month())] {
			continue
		}
		dom, dow := sets[2][t.Day()], sets[4][int(t.Weekday())]
		day := dom && dow
		if !domAny && !dowAny {
			day = dom || dow
		}
		if day {
			return t, true
		}
	}
	return time.Time{}, false
}

func cronSet(f string, lo, hi int) (map[int]bool, error) {
	set := map[int]bool{}
	for _, part := range strings.Split(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad step %q", part)
			}
			step = n
		}
		from, to := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			x, err1 := strconv.Atoi(a)
			y, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad range %q", part)
			}
			from, to = x, y
		default:
			x, err := strconv.Atoi(rng)
			if err != nil {
				return nil, fmt.Errorf("bad value %q", part)
			}
			from, to = x, x
			if hasStep {
				to = hi
			}
		}
		if from < lo || to > hi || from > to {
			return nil, fmt.Errorf("out of range %q", part)
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return set, nil
}

// cronMacroFields are the five fields each descriptor stands for.
var cronMacroFields = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
