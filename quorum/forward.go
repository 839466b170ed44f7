package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The forwarding protocol carries commands from any node to the active
// controller over the controller (Raft) port; see mux.go for how it shares
// the port. A client connects, writes its hello (hello.go) and forwardMagic,
// then a request frame, and reads a response frame. A response with
// "keep_alive":true says the server reads another request frame on the
// connection (within forwardServerIdle); the client may then send its
// next request there (forward_pool.go) or close it. A frame is a 4-byte
// big-endian length and that many bytes of JSON:
//
//	request:  {"op":"propose","type":"create_topics","cmd":{...},"timeout_ms":5000}
//	          {"op":"add_nonvoter","id":4,"addr":"host:port"}
//	          {"op":"status"}  (any member: its own log; status.go)
//	          {"op":"describe_quorum"}  (the leader: QuorumStatus)
//	          {"op":"await_applied","index":42}  (any member: publish.go)
//	response: {"code":0,"message":"","outcome_unknown":false,"reply":{...},"index":42}
//
// A propose may carry "nudge":true (Publish); its response carries the
// index the command applied at.
//
// code is a Kafka error code (kerr). A node that is not the active
// controller answers NOT_CONTROLLER, and the client looks the leader up again
// and retries until its context ends. Requests are not forwarded twice. A
// request is retried only when it surely did not apply: after NOT_CONTROLLER
// or when the connection failed before the request was written; a lost
// response or outcome_unknown gives ErrOutcomeUnknown to the caller.
const maxFrame = 64 << 20

// defaultForwardTimeout bounds a forwarded request whose context has no deadline.
const defaultForwardTimeout = 30 * time.Second

type forwardRequest struct {
	Op        string          `json:"op"`
	Type      CommandType     `json:"type,omitempty"`
	Cmd       json.RawMessage `json:"cmd,omitempty"`
	ID        int32           `json:"id,omitempty"`
	Addr      string          `json:"addr,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
	// Nudge (propose): nudge the followers after the commit (publish.go).
	Nudge bool `json:"nudge,omitempty"`
	// Index (await_applied): the log index to wait for.
	Index uint64 `json:"index,omitempty"`
	// Fresh (add_nonvoter): the joining node has no Raft state (voters.go).
	Fresh bool `json:"fresh,omitempty"`
	// DirectoryID (add_voter): when set, the observer's must match.
	DirectoryID string `json:"directory_id,omitempty"`
}

type forwardResponse struct {
	Code    int16           `json:"code"`
	Unknown bool            `json:"outcome_unknown,omitempty"`
	Leader  string          `json:"leader,omitempty"` // with NOT_CONTROLLER: the leader as known here
	Message string          `json:"message,omitempty"`
	Reply   json.RawMessage `json:"reply,omitempty"`
	// Index (propose): the log index the command applied at (Publish).
	Index uint64 `json:"index,omitempty"`
	// KeepAlive: the server reads the next request on this connection.
	KeepAlive bool `json:"keep_alive,omitempty"`
}

const (
	opPropose     = "propose"
	opAddNonvoter = "add_nonvoter"
	opAddVoter    = "add_voter"    // voters.go
	opRemoveVoter = "remove_voter" // voters.go
)

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return fmt.Errorf("quorum: forward frame of %d bytes exceeds %d", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// serveForward answers the forwarded requests of conn, one at a time,
// until the client closes it or leaves it idle for forwardServerIdle.
func (c *Controller) serveForward(conn net.Conn) {
	select {
	case <-c.raftReady: // a peer may forward while this node still opens
	case <-c.ctx.Done():
		conn.Close()
		return
	}
	if !c.trackConn(conn, true) {
		conn.Close()
		return
	}
	defer c.trackConn(conn, false)
	defer conn.Close()
	peer := int32(-1)
	if pc, ok := conn.(*peekedConn); ok {
		peer = pc.node
	}
	_ = conn.SetDeadline(time.Now().Add(c.cfg.ApplyTimeout + firstByteTimeout))
	for first := true; ; first = false {
		if !first {
			_ = conn.SetDeadline(time.Now().Add(forwardServerIdle))
		}
		var req forwardRequest
		if err := readFrame(conn, &req); err != nil {
			return
		}
		_ = conn.SetDeadline(time.Now().Add(c.cfg.ApplyTimeout + firstByteTimeout))
		if err := writeFrame(conn, c.answerForward(&req, peer)); err != nil || c.ctx.Err() != nil {
			return
		}
	}
}

// answerForward carries out one forwarded request from node peer (-1
// when its identity is not proven: see peerMayPropose).
func (c *Controller) answerForward(req *forwardRequest, peer int32) *forwardResponse {
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 || timeout > c.cfg.ApplyTimeout {
		timeout = c.cfg.ApplyTimeout
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	var resp forwardResponse
	var reply any
	var err error
	switch req.Op {
	case opPropose:
		cmd := newCommand(req.Type)
		if cmd == nil {
			err = kerrf(kerr.InvalidRequest, "unknown command %q", req.Type)
			break
		}
		if err = json.Unmarshal(req.Cmd, cmd); err != nil {
			err = kerrf(kerr.InvalidRequest, "%s: %v", req.Type, err)
			break
		}
		if err = c.peerMayPropose(peer, cmd); err != nil {
			break
		}
		reply, resp.Index, err = c.proposeLocal(ctx, cmd, req.Nudge)
	case opAddNonvoter, opAddVoter, opRemoveVoter:
		if req.Op == opAddNonvoter && peer >= 0 && req.ID != peer {
			err = c.refusePeer(peer, fmt.Sprintf("add node %d as a non-voter", req.ID))
			break
		}
		err = c.changeMembershipLocal(ctx, req)
	case opStatus:
		reply = c.report()
	case opDescribeQuorum:
		reply, err = c.describeLocal(ctx)
	case opAwaitApplied:
		err = c.awaitApplied(ctx, req.Index)
	default:
		err = kerrf(kerr.InvalidRequest, "unknown op %q", req.Op)
	}
	if err != nil {
		resp.Code, resp.Message = ErrorCode(err), err.Error()
		resp.Unknown = errors.Is(err, ErrOutcomeUnknown)
		if errors.Is(err, kerr.NotController) {
			_, resp.Leader = c.Leader()
		}
	} else if reply != nil {
		resp.Reply, _ = json.Marshal(reply)
	}
	resp.KeepAlive = true
	return &resp
}

// forward sends req to the node at addr and decodes the reply into reply
// (when not nil).
func (c *Controller) forward(ctx context.Context, addr string, req *forwardRequest, reply any) error {
	_, err := c.call(ctx, addr, req, reply)
	return err
}

// call is forward, also returning the response's index. It sends req on
// a kept connection to addr when there is a live one (forward_pool.go),
// else on a new one, and keeps the connection when the server offers to.
func (c *Controller) call(ctx context.Context, addr string, req *forwardRequest, reply any) (uint64, error) {
	pc := c.pool.get(addr)
	fresh := pc == nil
	if fresh {
		conn, err := c.mux.dial(ctx, addr)
		if err != nil {
			return 0, err
		}
		pc = &pooledConn{Conn: conn, br: bufio.NewReader(conn), created: time.Now()}
	}
	keep := false
	defer func() {
		if keep {
			c.pool.put(addr, pc)
		} else {
			pc.Close()
		}
	}()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(defaultForwardTimeout) // never hang on a half-open connection
	}
	_ = pc.SetDeadline(dl)
	req.TimeoutMS = time.Until(dl).Milliseconds()
	w := bufio.NewWriter(pc.Conn)
	if fresh {
		_, _ = w.Write(c.mux.hello) // errors stick in w
		_ = w.WriteByte(forwardMagic)
	}
	if err := writeFrame(w, req); err != nil {
		return 0, err
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	var resp forwardResponse
	br := pc.br
	if b, err := br.Peek(1); fresh && err == nil && b[0] == helloMagic {
		// Not a frame (its length would exceed maxFrame): the controller
		// at addr refused our hello and answered with its own.
		if h, err := readHello(br); err == nil {
			return 0, fmt.Errorf("%w: the controller at %s (node %d) is in cluster %s; this node is in cluster %s: check controller.quorum.voters and this node's log.dirs meta.properties",
				ErrWrongCluster, addr, h.NodeID, h.ClusterID, c.cfg.ClusterID)
		}
	}
	if err := readFrame(br, &resp); err != nil {
		return 0, outcomeUnknown(fmt.Errorf("no answer from the active controller at %s: %w", addr, err))
	}
	keep = resp.KeepAlive
	if resp.Code != 0 {
		return 0, &RemoteError{Err: kerr.ErrorForCode(resp.Code), Message: resp.Message, Unknown: resp.Unknown, Leader: resp.Leader}
	}
	if reply != nil && len(resp.Reply) > 0 {
		return resp.Index, json.Unmarshal(resp.Reply, reply)
	}
	return resp.Index, nil
}

// RemoteError is an error returned by the active controller to a forwarded
// request: errors.Is matches its kerr value, Message is the remote text.
// Unknown marks an outcome the controller could not know (ErrOutcomeUnknown);
// Leader is the answering node's idea of the leader, with NOT_CONTROLLER.
type RemoteError struct {
	Err     error
	Message string
	Unknown bool
	Leader  string
}

func (e *RemoteError) Error() string { return "active controller: " + e.Message }

// Unwrap gives the kerr value, and ErrOutcomeUnknown when Unknown.
func (e *RemoteError) Unwrap() []error {
	if e.Unknown {
		return []error{e.Err, ErrOutcomeUnknown}
	}
	return []error{e.Err}
}

// retriableRemote reports whether a forwarded request surely did not apply
// and may go to the (possibly new) leader again.
func retriableRemote(err error) bool {
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrWrongCluster) {
		return false
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return errors.Is(err, kerr.NotController)
	}
	return true // dial or write failed: the leader may have moved
}

// forwardCommand sends cmd to the node at addr (the active controller) and
// returns the decoded reply and the index it applied at.
func (c *Controller) forwardCommand(ctx context.Context, addr string, cmd Command, nudge bool) (any, uint64, error) {
	raw, err := json.Marshal(cmd)
	if err != nil {
		return nil, 0, err
	}
	reply := cmd.newReply()
	index, err := c.call(ctx, addr, &forwardRequest{Op: opPropose, Type: cmd.CommandType(), Cmd: raw, Nudge: nudge}, reply)
	if err != nil {
		return nil, 0, err
	}
	return reply, index, nil
}

// Join asks the quorum reachable at any of controllers (controller
// addresses, e.g. meta.properties' initial.controllers) to add this node,
// at its advertised address, as a non-voter: what a broker does on its
// first start, before it knows the leader. It follows NOT_CONTROLLER leader
// hints and retries until ctx ends. Adding a node that is already a member
// is a no-op. A controller of another cluster refuses (hello.go): Join
// tries the other addresses until ctx ends, and then returns an error
// wrapping ErrWrongCluster that names both clusters.
func (c *Controller) Join(ctx context.Context, controllers []string) error {
	id, addr := c.cfg.NodeID, c.Addr()
	if len(controllers) == 0 {
		return fmt.Errorf("%w: no controller addresses", ErrNoLeader)
	}
	next := controllers[0]
	var wrong error // the last refusal by another cluster's controller
	for i := 0; ; i++ {
		err := c.forward(ctx, next, &forwardRequest{Op: opAddNonvoter, ID: id, Addr: addr, Fresh: c.fresh}, nil)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrWrongCluster) {
			wrong = err
		}
		var re *RemoteError
		if errors.As(err, &re) && !errors.Is(err, kerr.NotController) {
			return err
		}
		if errors.As(err, &re) && re.Leader != "" && re.Leader != next {
			next = re.Leader
			continue
		}
		next = controllers[(i+1)%len(controllers)]
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			if wrong != nil {
				return fmt.Errorf("join: %w", wrong)
			}
			return fmt.Errorf("%w: join: %v (last error: %v)", ErrNoLeader, ctx.Err(), err)
		case <-t.C:
		}
	}
}
