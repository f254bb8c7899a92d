package update

import "time"

func nowOf(*Options) time.Time { return time.Now() }
