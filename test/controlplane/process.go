package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// starter starts child processes from one OS thread that lives as long as the
// process. Children get SIGKILL when their parent thread dies (Pdeathsig), so
// a test binary that panics or is killed leaves no control plane behind; the
// dedicated thread makes that hold for the life of the test binary rather
// than for the life of whichever runtime thread happened to fork.
type starter struct {
	requests chan startRequest
}

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func newStarter() *starter {
	s := &starter{requests: make(chan startRequest)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must outlive the children
		for r := range s.requests {
			r.done <- r.cmd.Start()
		}
	}()
	return s
}

func (s *starter) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	done := make(chan error, 1)
	s.requests <- startRequest{cmd: cmd, done: done}
	return <-done
}

// process is one running control-plane component.
type process struct {
	name   string
	cmd    *exec.Cmd
	logf   *os.File
	exited chan struct{}
	err    error
}

func startProcess(s *starter, name, logPath, bin string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := s.start(cmd); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logf: logf, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop asks the process to exit, and kills its process group if it has not
// exited within grace.
func (p *process) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return fmt.Errorf("%s did not stop within %s and was killed", p.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// kill kills the process group at once and waits up to wait for the process to exit.
func (p *process) kill(wait time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// processesUsing lists the pids of live processes whose command line
// mentions dir: after a stop there must be none.
func processesUsing(dir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), dir) && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

var errNotReady = errors.New("not ready")

// listeningPorts returns the TCP ports the process pid listens on: the sockets among
// its open files that /proc/net/tcp and tcp6 show in the LISTEN state.
func listeningPorts(pid int) (map[int]bool, error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // no IPv6
			}
			return nil, err
		}
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if !ok {
				continue
			}
			if port, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports[int(port)] = true
			}
		}
	}
	return ports, nil
}
