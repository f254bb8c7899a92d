package apicount

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// requestMetric is the API server's own count of the requests it served.
const requestMetric = "apiserver_request_total"

var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// ServerCounts reads, from the text of the API server's /metrics, how many requests it
// has served ("verb resource" as Classify names them) and, of those, the ones it
// answered with an error ("verb resource code"). The difference of two readings is what
// every client sent in between: a benchmark that reads them around a command measures
// the command without a proxy in its path (with the few requests the control plane's
// own components send in the meantime).
func ServerCounts(metrics []byte) (all, failed Counts, err error) {
	all, failed = Counts{}, Counts{}
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, requestMetric+"{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return nil, nil, fmt.Errorf("%s: no end of labels in %q", requestMetric, line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w in %q", requestMetric, err, line)
		}
		labels := map[string]string{}
		for _, m := range metricLabel.FindAllStringSubmatch(line[:end], -1) {
			labels[m[1]] = m[2]
		}
		key := serverVerb(labels["verb"]) + " " + serverResource(labels["resource"], labels["subresource"])
		all[key] += int(v)
		if code, _ := strconv.Atoi(labels["code"]); code >= 400 {
			failed[key+" "+labels["code"]] += int(v)
		}
	}
	return all, failed, sc.Err()
}

// serverVerb is the API server's verb label as Classify names it.
func serverVerb(v string) string {
	switch v {
	case "POST":
		return "create"
	case "PUT":
		return "update"
	}
	return strings.ToLower(v)
}

// serverResource is the resource of a request as Classify names it; requests outside
// resources are "discovery".
func serverResource(resource, sub string) string {
	switch {
	case resource == "":
		return "discovery"
	case sub != "":
		return resource + "/" + sub
	}
	return resource
}
