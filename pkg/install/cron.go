package install

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// cronField is one field of a five-field cron schedule.
type cronField struct {
	name     string
	min, max int
	// names are the symbolic values (JAN, SUN, ...), index min first.
	names []string
	// question: "?" is allowed (day of month, day of week).
	question bool
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31, question: true},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	// 7 is Sunday as well as 0.
	{name: "day of week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}, question: true},
}

// cronMacros are the descriptors a CronJob accepts instead of five fields.
var cronMacros = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// ValidateSchedule checks a CronJob schedule: five fields (minute, hour,
// day of month, month, day of week) of values, ranges, lists and steps, or
// one of the descriptors @yearly, @monthly, @weekly, @daily, @hourly. It
// refuses what the API server would refuse, with a message that says which
// field is wrong; a time zone belongs in the CronJob's spec.timeZone, not in
// the schedule.
func ValidateSchedule(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errors.New(`the schedule is empty: use five fields, such as "*/5 * * * *"`)
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return errors.New("a time zone in the schedule is not supported by CronJobs")
	}
	if strings.HasPrefix(s, "@") {
		if cronMacros[s] {
			return nil
		}
		return fmt.Errorf("unknown descriptor %q: use @yearly, @monthly, @weekly, @daily, @hourly or five fields", s)
	}
	fields := strings.Fields(s)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		if err := cronFields[i].validate(f); err != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i].name, f, err)
		}
	}
	return nil
}

func (c cronField) validate(field string) error {
	for item := range strings.SplitSeq(field, ",") {
		if err := c.validateItem(item); err != nil {
			return err
		}
	}
	return nil
}

func (c cronField) validateItem(item string) error {
	if item == "" {
		return errors.New("empty list item")
	}
	rng, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || n < 1 {
			return fmt.Errorf("step %q must be a positive number", step)
		}
	}
	switch rng {
	case "*":
		return nil
	case "?":
		if !c.question || hasStep {
			return errors.New(`"?" is only allowed alone, in the day-of-month and day-of-week fields`)
		}
		return nil
	}
	lo, hi, isRange := strings.Cut(rng, "-")
	low, err := c.value(lo)
	if err != nil {
		return err
	}
	if !isRange {
		return nil
	}
	high, err := c.value(hi)
	if err != nil {
		return err
	}
	if low > high {
		return fmt.Errorf("range %s: %s is after %s", rng, lo, hi)
	}
	return nil
}

func (c cronField) value(s string) (int, error) {
	for i, name := range c.names {
		if strings.EqualFold(s, name) {
			return c.min + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < c.min || n > c.max {
		return 0, fmt.Errorf("%d is out of range %d-%d", n, c.min, c.max)
	}
	return n, nil
}
