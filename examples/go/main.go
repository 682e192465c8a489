// Command rami-go-bot plays Rami over gRPC, written only against the contract in proto/rami/v1.
//
// Its Go code is generated from the .proto files at build time (build.sh: protoc with
// protoc-gen-go and protoc-gen-go-grpc, import path rami.invalid/gen/go/rami/v1 from the files'
// go_package). It joins a table with 32 random bytes of entropy (and a request_id, so that a
// retried join gets the same seat), opens one Play stream (TableService.Play: the table's
// updates and its own commands on one bidirectional stream), and whenever the newest view says
// it is its turn it sends one command decided on that view, with that view's number. It
// decides with the server's hand analysis (TableService.AnalyseMyHand, RulesService.AnalyseHand
// and CheckMeld):
//
//	draw     portuguese, simple: the discard when the analysis says it melds and lowers the points
//	         left, else the stock; tallage: the discard with the lay that uses it (a finish, the
//	         opening, or once opened an addition to a clean meld or a new meld), else the stock
//	declare  portuguese: when the analysis lists declare_cards
//	lay      tallage: a whole-hand finish, else the opening the analysis gives; once opened, all
//	         but one card when that finishes, else the melds in hand and single cards that fit
//	         clean melds on the table; simple: a whole-hand finish
//	discard  the costliest card the analysis leaves over (never a joker while another can go)
//
// A refused command (FAILED_PRECONDITION, INVALID_ARGUMENT) is counted and answered with a safe
// move; ABORTED means the game moved on: the bot decides again on the next view; a command
// refused as RESOURCE_EXHAUSTED (too fast) is sent again a little later. A dropped stream, or
// one silent for 45 s (`--silence`; the server leaves no stream silent past 15 s), is resumed with `after` = the last update number seen, less one. A table behind what
// the bot saw (its server restored from an older backup: the resume is refused
// INVALID_ARGUMENT BAD_NUMBER, or opens with a heartbeat below the last update seen) is
// followed anew, from where it is. It exits 0 when the game is over, printing one summary line.
//
//	rami-go-bot HOST:PORT TABLE_ID [NAME] [--seat N] [--token TOKEN] [--timeout SECONDS]
//	            [--silence SECONDS] [--quiet]
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ramiv1 "rami.invalid/gen/go/rami/v1"
)

const (
	tokenMetadata = "rami-token"
	joker         = ramiv1.Card_CARD_JOKER
	noCard        = ramiv1.Card_CARD_UNSPECIFIED
	maxReconnects = 20
	callTimeout   = 15 * time.Second
)

// ---- cards -----------------------------------------------------------------------------------

// rank is 1 (ace) to 13 (king): value - 1 = suit * 13 + rank - 1 (cards.proto).
func rank(c ramiv1.Card) int { return (int(c)-1)%13 + 1 }

// cardValue is what a card left in hand costs (docs/rules.md): portuguese A 20, joker 0;
// moroccan A 10, joker `joker_penalty`; J Q K 10; pips their number.
func cardValue(c ramiv1.Card, v *ramiv1.View) int {
	portuguese := v.GetVariant() == ramiv1.Variant_VARIANT_PORTUGUESE
	if c == joker {
		if portuguese {
			return 0
		}
		return int(v.GetOptions().GetJokerPenalty())
	}
	switch r := rank(c); {
	case r == 1 && portuguese:
		return 20
	case r == 1:
		return 10
	case r > 10:
		return 10
	default:
		return r
	}
}

func contains(cards []ramiv1.Card, c ramiv1.Card) bool {
	for _, x := range cards {
		if x == c {
			return true
		}
	}
	return false
}

// without is cards less one copy of c.
func without(cards []ramiv1.Card, c ramiv1.Card) []ramiv1.Card {
	out := make([]ramiv1.Card, 0, len(cards))
	removed := false
	for _, x := range cards {
		if x == c && !removed {
			removed = true
			continue
		}
		out = append(out, x)
	}
	return out
}

func with(cards []ramiv1.Card, c ramiv1.Card) []ramiv1.Card {
	return append(append(make([]ramiv1.Card, 0, len(cards)+1), cards...), c)
}

// newMeld lays a meld of the analysis: a run's jokers say the card they stand for.
func newMeld(m *ramiv1.Meld) *ramiv1.LayStep {
	nm := &ramiv1.NewMeld{Cards: m.GetCards()}
	if m.GetKind() == ramiv1.MeldKind_MELD_KIND_RUN {
		nm.JokersAs = m.GetStandsFor()
	}
	return &ramiv1.LayStep{Step: &ramiv1.LayStep_NewMeld{NewMeld: nm}}
}

func newMelds(ms []*ramiv1.Meld) []*ramiv1.LayStep {
	steps := make([]*ramiv1.LayStep, 0, len(ms))
	for _, m := range ms {
		steps = append(steps, newMeld(m))
	}
	return steps
}

func hasClean(ms []*ramiv1.Meld, kind ramiv1.MeldKind) bool {
	for _, m := range ms {
		if m.GetKind() == kind && !contains(m.GetCards(), joker) {
			return true
		}
	}
	return false
}

func meldsHold(ms []*ramiv1.Meld, c ramiv1.Card) bool {
	for _, m := range ms {
		if contains(m.GetCards(), c) {
			return true
		}
	}
	return false
}

// ---- errors ----------------------------------------------------------------------------------

// reason is the google.rpc.ErrorInfo reason of a refusal (NOT_YOUR_TURN, STALE...): the server
// puts a google.rpc.Status in the grpc-status-details-bin trailer, which grpc-go's status
// package decodes (the errdetails import registers ErrorInfo's type).
func reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// reasonOf is that reason as the contract's ErrorReason enum (errors.proto): the wire carries
// the value's name without its ERROR_REASON_ prefix. An unknown reason is UNSPECIFIED: treat
// it by its status code.
func reasonOf(err error) ramiv1.ErrorReason {
	return ramiv1.ErrorReason(ramiv1.ErrorReason_value["ERROR_REASON_"+reason(err)])
}

// newRequestID is a fresh request_id: 24 random bytes in base64url, 32 characters of
// A-Z a-z 0-9 - _. A JoinTable id is a secret (its retry hands back the seat's token); the
// command ids need not be, but random ones never meet an id sent before with the same token.
func newRequestID() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func describe(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	if r := reason(err); r != "" {
		return fmt.Sprintf("%s (%s): %s", st.Code(), r, st.Message())
	}
	return fmt.Sprintf("%s: %s", st.Code(), st.Message())
}

// errSilent ends a stream that brought nothing for the bot's `silence` (a frozen or cut-off
// server closes nothing): it is opened again.
var errSilent = errors.New("no message")

// resumable says whether a Play stream that ended so may be opened again with `after`.
func resumable(err error) bool {
	if err == io.EOF || errors.Is(err, errSilent) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Internal,
		codes.ResourceExhausted: // TOO_SLOW: cut off, resume from the last number
		return true
	}
	return false
}

// errBehind ends a stream whose heartbeat is below the newest update seen.
type errBehind struct{ why string }

func (e errBehind) Error() string { return "the table is behind: " + e.why }

// behind says why a stream that ended with err shows the table behind the updates seen, or
// "": its resume (`after`) refused INVALID_ARGUMENT BAD_NUMBER ("update N has not happened:
// the table is at M"), or a heartbeat below the newest update seen (a table one update behind:
// a resume one update early is not refused then).
func (b *bot) behind(err error) string {
	var e errBehind
	switch {
	case !b.haveLast: // no `after` sent: not a restore
		return ""
	case errors.As(err, &e):
		return e.why
	case reasonOf(err) == ramiv1.ErrorReason_ERROR_REASON_BAD_NUMBER:
		return status.Convert(err).Message()
	}
	return ""
}

// ---- the bot ---------------------------------------------------------------------------------

type stats struct {
	actions, lays, refused, aborted, limited, reconnects int
}

type bot struct {
	lobby ramiv1.LobbyServiceClient
	table ramiv1.TableServiceClient
	rules ramiv1.RulesServiceClient

	tableID, name, token string
	quiet                bool
	silence              time.Duration // a stream that brings nothing this long is dead
	seat                 int32         // -1 until known
	last                 uint64        // the number of the newest update seen
	haveLast             bool          // an update was seen (since the bot last followed the table anew)
	analysisOff          bool          // the table refused AnalyseMyHand (ANALYSIS_OFF): safe moves only
	stats                stats
}

func (b *bot) logf(format string, args ...interface{}) {
	if !b.quiet {
		fmt.Fprintf(os.Stderr, "rami-go-bot: "+format+"\n", args...)
	}
}

// withToken is ctx with the seat's token as the call's `rami-token` metadata.
func (b *bot) withToken(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, tokenMetadata, b.token)
}

// call runs one unary call, the very same request again a few times when its answer may have
// been lost (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN) or the server asks us to slow
// down (RESOURCE_EXHAUSTED: hand analyses are on a budget of server time). Only read-only calls
// and calls with a request_id go through it: a retry of those never does anything twice.
func call[Resp any](ctx context.Context, do func(context.Context) (Resp, error)) (Resp, error) {
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := do(cctx)
		cancel()
		if err == nil || !mayRetry(status.Code(err)) || attempt >= 6 || ctx.Err() != nil {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return resp, ctx.Err()
		case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
		}
	}
}

func mayRetry(code codes.Code) bool {
	switch code {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Internal,
		codes.Unknown:
		return true
	}
	return false
}

func (b *bot) join(ctx context.Context, seat *int32) error {
	entropy := make([]byte, 32) // our own randomness goes into every deal (docs/records.md)
	if _, err := rand.Read(entropy); err != nil {
		return err
	}
	// A request_id makes the join safe to send again: a retry gets the same seat and token.
	req := &ramiv1.JoinTableRequest{
		TableId: b.tableID, Name: b.name, Seat: seat, Entropy: entropy, RequestId: newRequestID(),
	}
	resp, err := call(ctx, func(c context.Context) (*ramiv1.JoinTableResponse, error) {
		return b.lobby.JoinTable(c, req)
	})
	if err != nil {
		return err
	}
	b.token, b.seat = resp.GetToken(), resp.GetSeat()
	b.logf("joined table %s at seat %d (deal commitment %s)", b.tableID, b.seat,
		resp.GetTable().GetDealCommitment())
	return nil
}

// run plays until the game is over, opening the Play stream again when it drops.
func (b *bot) run(ctx context.Context) (*ramiv1.View, error) {
	for {
		view, err := b.session(ctx)
		if err == nil {
			return view, nil
		}
		why := b.behind(err)
		if ctx.Err() != nil || (why == "" && !resumable(err)) {
			return nil, err
		}
		b.stats.reconnects++
		if b.stats.reconnects > maxReconnects {
			return nil, fmt.Errorf("gave up after %d reconnects: %v", maxReconnects, err)
		}
		if why != "" {
			// Its server was restored from an older backup: follow the table from where it is
			// now (a stream with no `after`), forgetting the updates seen.
			b.last, b.haveLast = 0, false
			b.logf("the table is behind what this bot saw (%s): following it anew", why)
		} else {
			b.logf("stream lost (%s); resuming after update %d", describe(err), b.after())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(50*b.stats.reconnects) * time.Millisecond):
		}
	}
}

// after is where a resumed stream starts: one update before the newest seen, so that if the
// stream dropped on our turn its view comes again and is decided anew (a copy of a command that
// already got through is only ABORTED). Tries that fail in a row all start there.
func (b *bot) after() uint64 {
	if b.last > 0 {
		return b.last - 1
	}
	return 0
}

// A command sent on the Play stream and not yet answered.
type command struct {
	id   uint64
	view *ramiv1.View // the view it was decided on
	act  *ramiv1.ActRequest
	safe bool // a refusal is answered with a safe move (false for the safe move itself)
	sent int  // times sent (RESOURCE_EXHAUSTED: again a little later)
}

type received struct {
	msg *ramiv1.PlayResponse
	err error
}

// session is one Play stream, until the game is over (nil error) or the stream ends.
func (b *bot) session(parent context.Context) (*ramiv1.View, error) {
	ctx, cancel := context.WithCancel(b.withToken(parent))
	defer cancel()
	stream, err := b.table.Play(ctx)
	if err != nil {
		return nil, err
	}
	open := &ramiv1.WatchRequest{TableId: b.tableID}
	if b.haveLast {
		open.After = proto.Uint64(b.after())
	}
	if err := stream.Send(&ramiv1.PlayRequest{Kind: &ramiv1.PlayRequest_Open{Open: open}}); err != nil {
		return nil, err
	}
	msgs := make(chan received, 64)
	go func() {
		for {
			msg, err := stream.Recv()
			select {
			case msgs <- received{msg, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var (
		latest  *ramiv1.View
		handled uint64 // the number of the newest view decided on
		pending *command
		nextID  uint64
	)
	send := func(c *command) error {
		c.sent++
		return stream.Send(&ramiv1.PlayRequest{CommandId: c.id, Kind: &ramiv1.PlayRequest_Act{Act: c.act}})
	}
	decideAndSend := func(v *ramiv1.View, safe bool) error {
		var act *ramiv1.ActRequest
		if safe {
			a, err := b.decide(ctx, v)
			if err != nil {
				return err
			}
			act = a
		} else {
			act = safeMove(v)
		}
		act.Number = v.GetNumber()
		act.RequestId = newRequestID()
		nextID++
		pending = &command{id: nextID, view: v, act: act, safe: safe}
		return send(pending)
	}
	quiet := time.NewTimer(b.silence)
	defer quiet.Stop()
	for {
		select {
		case <-quiet.C:
			return nil, fmt.Errorf("%w for %s", errSilent, b.silence)
		case r := <-msgs:
			if r.err != nil {
				return nil, r.err
			}
			if !quiet.Stop() {
				<-quiet.C
			}
			quiet.Reset(b.silence)
			switch k := r.msg.GetKind().(type) {
			case *ramiv1.PlayResponse_Heartbeat:
				// The stream is alive. Below the newest update seen, the table is behind it.
				if n := k.Heartbeat.GetNumber(); b.haveLast && n < b.last {
					return nil, errBehind{fmt.Sprintf("the table is at %d, the bot saw %d", n, b.last)}
				}
			case *ramiv1.PlayResponse_Update:
				u := k.Update
				b.last, b.haveLast = u.GetNumber(), true
				if v := u.GetView(); latest == nil || v.GetNumber() >= latest.GetNumber() {
					latest = v
				}
				// The seat is renumbered when the game starts: read it from the view. (Seat is
				// optional: unset for a spectator, so test for nil, as 0 is a seat.)
				if latest.Seat != nil {
					b.seat = latest.GetSeat()
				}
				if r.msg.Accepted != nil && pending != nil && r.msg.GetAccepted() == pending.id {
					b.stats.actions++
					if lay := layOf(pending.act); lay != nil {
						b.stats.lays++
						b.logf("laid %d steps at update %d (%s)", len(lay.GetSteps()), u.GetNumber(), describeLay(pending.act))
					}
					pending = nil
				}
				if latest.GetPhase() == ramiv1.Phase_PHASE_GAME_OVER {
					return latest, nil
				}
			case *ramiv1.PlayResponse_AcceptedBefore:
				// A copy of a command accepted earlier (the same request_id): it played nothing
				// again, and its update was sent as any other.
				if pending != nil && k.AcceptedBefore.GetCommandId() == pending.id {
					b.stats.actions++
					pending = nil
				}
			case *ramiv1.PlayResponse_Refused:
				ref := k.Refused
				if pending == nil || ref.GetCommandId() != pending.id {
					continue // the answer to a command of an earlier stream
				}
				c := pending
				pending = nil
				switch codes.Code(ref.GetCode()) {
				case codes.Aborted:
					b.stats.aborted++ // stale: the newer view is on its way (or here)
				case codes.ResourceExhausted: // too fast: the same command a little later
					b.stats.limited++
					if c.sent >= 6 {
						return nil, fmt.Errorf("command %d refused %d times: %s", c.id, c.sent, ref.GetReason())
					}
					time.Sleep(time.Duration(100<<c.sent) * time.Millisecond)
					pending = c
					if err := send(c); err != nil {
						return nil, err
					}
				case codes.FailedPrecondition, codes.InvalidArgument:
					b.stats.refused++
					b.logf("refused %v: %s %s", c.act, ref.GetReason(), ref.GetMessage())
					if !c.safe {
						return nil, fmt.Errorf("even the safe move was refused: %s", ref.GetReason())
					}
					// The turn is still ours and nothing changed: a safe move on the same view.
					if err := decideAndSend(c.view, false); err != nil {
						return nil, err
					}
				default:
					return nil, fmt.Errorf("command refused: %s %s: %s",
						codes.Code(ref.GetCode()), ref.GetReason(), ref.GetMessage())
				}
			}
		}
		if pending == nil && b.myTurn(latest) && latest.GetNumber() > handled {
			handled = latest.GetNumber()
			if err := decideAndSend(latest, true); err != nil {
				return nil, err
			}
		}
	}
}

// layOf is the lay a command carries (a Lay, or a DrawAction's), or nil.
func layOf(act *ramiv1.ActRequest) *ramiv1.Lay {
	if lay := act.GetLay(); lay != nil {
		return lay
	}
	return act.GetDraw().GetLay()
}

func describeLay(act *ramiv1.ActRequest) string {
	var parts []string
	if act.GetDraw() != nil {
		parts = append(parts, "with the discard")
	}
	for _, s := range layOf(act).GetSteps() {
		switch st := s.GetStep().(type) {
		case *ramiv1.LayStep_NewMeld:
			parts = append(parts, fmt.Sprintf("new %v", st.NewMeld.GetCards()))
		case *ramiv1.LayStep_Add:
			parts = append(parts, fmt.Sprintf("add %v to meld %d", st.Add.GetCards(), st.Add.GetMeld()))
		}
	}
	return strings.Join(parts, ", ")
}

func (b *bot) myTurn(v *ramiv1.View) bool {
	if v == nil || v.Seat == nil || v.GetTurn() != v.GetSeat() {
		return false
	}
	return v.GetPhase() == ramiv1.Phase_PHASE_DRAW || v.GetPhase() == ramiv1.Phase_PHASE_PLAY
}

// safeMove is always legal on the seat's turn: draw from the stock, or discard the card drawn
// (any card when there is none).
func safeMove(v *ramiv1.View) *ramiv1.ActRequest {
	if v.GetPhase() == ramiv1.Phase_PHASE_DRAW {
		return drawAct(ramiv1.DrawSource_DRAW_SOURCE_STOCK, nil)
	}
	card := v.GetDrawn()
	if card == noCard || !contains(v.GetHand(), card) {
		hand := v.GetHand()
		card = hand[len(hand)-1]
	}
	return discardAct(card)
}

func drawAct(source ramiv1.DrawSource, steps []*ramiv1.LayStep) *ramiv1.ActRequest {
	d := &ramiv1.DrawAction{Source: source}
	if len(steps) > 0 {
		d.Lay = &ramiv1.Lay{Steps: steps}
	}
	return &ramiv1.ActRequest{Action: &ramiv1.ActRequest_Draw{Draw: d}}
}

func discardAct(c ramiv1.Card) *ramiv1.ActRequest {
	return &ramiv1.ActRequest{Action: &ramiv1.ActRequest_Discard{Discard: &ramiv1.DiscardAction{Card: c}}}
}

func layAct(steps []*ramiv1.LayStep) *ramiv1.ActRequest {
	return &ramiv1.ActRequest{Action: &ramiv1.ActRequest_Lay{Lay: &ramiv1.Lay{Steps: steps}}}
}

// ---- the server's analysis -------------------------------------------------------------------

func (b *bot) analyseMine(ctx context.Context) (*ramiv1.Analysis, error) {
	resp, err := call(ctx, func(c context.Context) (*ramiv1.AnalyseMyHandResponse, error) {
		return b.table.AnalyseMyHand(c, &ramiv1.AnalyseMyHandRequest{TableId: b.tableID})
	})
	return resp.GetAnalysis(), err
}

func (b *bot) analyse(ctx context.Context, v *ramiv1.View, hand []ramiv1.Card) (*ramiv1.Analysis, error) {
	req := &ramiv1.AnalyseHandRequest{Variant: v.GetVariant(), Options: v.GetOptions(), Hand: hand, Bar: v.GetBar()}
	resp, err := call(ctx, func(c context.Context) (*ramiv1.AnalyseHandResponse, error) {
		return b.rules.AnalyseHand(c, req)
	})
	return resp.GetAnalysis(), err
}

func (b *bot) fits(ctx context.Context, v *ramiv1.View, tm *ramiv1.TableMeld, c ramiv1.Card) (bool, error) {
	req := &ramiv1.CheckMeldRequest{
		Cards:         with(tm.GetMeld().GetCards(), c),
		JokersPerMeld: v.GetOptions().GetJokersPerMeld(),
	}
	resp, err := call(ctx, func(cc context.Context) (*ramiv1.CheckMeldResponse, error) {
		return b.rules.CheckMeld(cc, req)
	})
	return resp.GetValid(), err
}

// ---- one decision per view -------------------------------------------------------------------

// decide is the command for the view on which it is the seat's turn (its number is set later).
func (b *bot) decide(ctx context.Context, v *ramiv1.View) (*ramiv1.ActRequest, error) {
	if b.analysisOff {
		return safeMove(v), nil
	}
	act, err := b.decideWithAnalysis(ctx, v)
	if reasonOf(err) == ramiv1.ErrorReason_ERROR_REASON_ANALYSIS_OFF {
		b.logf("this table allows no hand analysis: playing safe moves")
		b.analysisOff = true
		return safeMove(v), nil
	}
	return act, err
}

func (b *bot) decideWithAnalysis(ctx context.Context, v *ramiv1.View) (*ramiv1.ActRequest, error) {
	if v.GetPhase() == ramiv1.Phase_PHASE_DRAW {
		return b.draw(ctx, v)
	}
	if v.GetCanLay() && v.GetVariant() != ramiv1.Variant_VARIANT_PORTUGUESE {
		steps, err := b.lay(ctx, v)
		if err != nil {
			return nil, err
		}
		if len(steps) > 0 {
			return layAct(steps), nil
		}
	}
	return b.end(ctx, v)
}

func (b *bot) opened(v *ramiv1.View) bool {
	for _, p := range v.GetPlayers() {
		if p.GetSeat() == v.GetSeat() {
			return p.GetOpened()
		}
	}
	return false
}

func (b *bot) draw(ctx context.Context, v *ramiv1.View) (*ramiv1.ActRequest, error) {
	stock := drawAct(ramiv1.DrawSource_DRAW_SOURCE_STOCK, nil)
	top := v.GetDiscardTop()
	if top == noCard || !mayTakeDiscard(v) {
		return stock, nil
	}
	if v.GetVariant() == ramiv1.Variant_VARIANT_TALLAGE {
		// The card taken must be laid in the same DrawAction.
		steps, err := b.pickUp(ctx, v, top)
		if err != nil || len(steps) == 0 {
			return stock, err
		}
		return drawAct(ramiv1.DrawSource_DRAW_SOURCE_DISCARD, steps), nil
	}
	// Portuguese and simple: the discard when it melds and lowers the points left.
	now, err := b.analyse(ctx, v, v.GetHand())
	if err != nil {
		return nil, err
	}
	after, err := b.analyse(ctx, v, with(v.GetHand(), top))
	if err != nil {
		return nil, err
	}
	if !contains(after.GetLeft(), top) && after.GetPointsLeft() < now.GetPointsLeft() {
		return drawAct(ramiv1.DrawSource_DRAW_SOURCE_DISCARD, nil), nil
	}
	return stock, nil
}

func mayTakeDiscard(v *ramiv1.View) bool {
	for _, s := range v.GetDrawSources() {
		if s == ramiv1.DrawSource_DRAW_SOURCE_DISCARD {
			return true
		}
	}
	return false
}

// pickUp is a tallage lay that uses the discard `top`, or none: a whole-hand finish, the
// opening, or (opened on an earlier turn) an addition to a clean meld on the table or a new meld.
func (b *bot) pickUp(ctx context.Context, v *ramiv1.View, top ramiv1.Card) ([]*ramiv1.LayStep, error) {
	hand := with(v.GetHand(), top)
	a, err := b.analyse(ctx, v, hand)
	if err != nil {
		return nil, err
	}
	opened := b.opened(v)
	steps, err := b.finishLay(ctx, v, hand, a, !opened, top)
	if err != nil || steps != nil {
		return steps, err
	}
	if !opened {
		if a.GetCanOpen() && meldsHold(a.GetOpeningMelds(), top) {
			return newMelds(a.GetOpeningMelds()), nil
		}
		return nil, nil
	}
	if top != joker {
		for _, tm := range v.GetMelds() {
			if contains(tm.GetMeld().GetCards(), joker) {
				continue // clean melds only: keep it simple
			}
			ok, err := b.fits(ctx, v, tm, top)
			if err != nil {
				return nil, err
			}
			if ok {
				add := &ramiv1.AddToMeld{Meld: tm.GetNumber(), Cards: []ramiv1.Card{top}}
				return []*ramiv1.LayStep{{Step: &ramiv1.LayStep_Add{Add: add}}}, nil
			}
		}
	}
	for _, m := range a.GetMelds() {
		if contains(m.GetCards(), top) && len(hand)-len(m.GetCards()) >= 1 {
			return []*ramiv1.LayStep{newMeld(m)}, nil
		}
	}
	return nil, nil
}

// finishLay is a whole-hand finish of `hand`: every card but the last discard in new melds (with
// a clean set and a clean run when `clean`, as a finish before opening needs), or nil. With
// `must` set, that card must be in the melds (a discard taken in tallage is laid at once).
func (b *bot) finishLay(ctx context.Context, v *ramiv1.View, hand []ramiv1.Card, a *ramiv1.Analysis, clean bool, must ramiv1.Card) ([]*ramiv1.LayStep, error) {
	for _, last := range a.GetFinishDiscards() {
		if must != noCard && last == must {
			continue
		}
		rest, err := b.analyse(ctx, v, without(hand, last))
		if err != nil {
			return nil, err
		}
		if len(rest.GetLeft()) > 0 || len(rest.GetMelds()) == 0 {
			continue
		}
		if clean && !(hasClean(rest.GetMelds(), ramiv1.MeldKind_MELD_KIND_SET) &&
			hasClean(rest.GetMelds(), ramiv1.MeldKind_MELD_KIND_RUN)) {
			continue
		}
		return newMelds(rest.GetMelds()), nil
	}
	return nil, nil
}

// lay is what to lay now (can_lay, tallage or simple), or nothing.
func (b *bot) lay(ctx context.Context, v *ramiv1.View) ([]*ramiv1.LayStep, error) {
	a, err := b.analyseMine(ctx)
	if err != nil {
		return nil, err
	}
	tallage := v.GetVariant() == ramiv1.Variant_VARIANT_TALLAGE
	opened := tallage && b.opened(v)
	steps, err := b.finishLay(ctx, v, v.GetHand(), a, !opened, noCard)
	if err != nil || steps != nil || !tallage {
		return steps, err
	}
	if !opened {
		if a.GetCanOpen() {
			return newMelds(a.GetOpeningMelds()), nil
		}
		return nil, nil
	}
	return b.freeLay(ctx, v, a)
}

// freeLay (tallage, opened on an earlier turn): the melds in hand, then single cards that fit
// clean melds on the table, always keeping a card to discard.
func (b *bot) freeLay(ctx context.Context, v *ramiv1.View, a *ramiv1.Analysis) ([]*ramiv1.LayStep, error) {
	melds := a.GetMelds()
	kept := len(a.GetLeft())
	if kept == 0 && len(melds) > 0 {
		// No lay may empty the hand: keep one meld back (a finish was looked for first).
		kept = len(melds[len(melds)-1].GetCards())
		melds = melds[:len(melds)-1]
	}
	steps := newMelds(melds)
	loose := append([]ramiv1.Card(nil), a.GetLeft()...)
	for _, tm := range v.GetMelds() {
		if kept <= 1 {
			break
		}
		if contains(tm.GetMeld().GetCards(), joker) {
			continue
		}
		for _, c := range loose {
			if c == joker {
				continue
			}
			ok, err := b.fits(ctx, v, tm, c)
			if err != nil {
				return nil, err
			}
			if ok {
				add := &ramiv1.AddToMeld{Meld: tm.GetNumber(), Cards: []ramiv1.Card{c}}
				steps = append(steps, &ramiv1.LayStep{Step: &ramiv1.LayStep_Add{Add: add}})
				loose = without(loose, c)
				kept--
				break
			}
		}
	}
	return steps, nil
}

// end ends the turn: a declaration (portuguese) or a discard.
func (b *bot) end(ctx context.Context, v *ramiv1.View) (*ramiv1.ActRequest, error) {
	a, err := b.analyseMine(ctx)
	if err != nil {
		return nil, err
	}
	if v.GetVariant() == ramiv1.Variant_VARIANT_PORTUGUESE && v.GetCanDeclare() && len(a.GetDeclareCards()) > 0 {
		return &ramiv1.ActRequest{Action: &ramiv1.ActRequest_Declare{
			Declare: &ramiv1.DeclareAction{Card: a.GetDeclareCards()[0]},
		}}, nil
	}
	pool := a.GetLeft()
	if len(pool) == 0 {
		pool = v.GetHand()
	}
	var candidates []ramiv1.Card
	for _, c := range pool {
		if c != joker {
			candidates = append(candidates, c)
		}
	}
	if len(candidates) == 0 {
		candidates = pool
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if cardValue(c, v) > cardValue(best, v) {
			best = c
		}
	}
	return discardAct(best), nil
}

// ---- main ------------------------------------------------------------------------------------

const usage = "usage: rami-go-bot HOST:PORT TABLE_ID [NAME] [--seat N] [--token TOKEN] " +
	"[--timeout SECONDS] [--silence SECONDS] [--quiet]"

func main() {
	fs := flag.NewFlagSet("rami-go-bot", flag.ContinueOnError)
	seat := fs.Int("seat", -1, "the seat wanted (default: the first free one)")
	token := fs.String("token", "", "take a seat back with its token instead of joining")
	timeout := fs.Float64("timeout", 0, "give up (exit 3) when the game is not over after this many seconds")
	// The server leaves no stream silent past 15 s (a heartbeat): 45 s of silence is a dead stream.
	silence := fs.Float64("silence", 45, "open the stream again when it brings nothing for this many seconds")
	quiet := fs.Bool("quiet", false, "no log on stderr")
	fs.Usage = func() { fmt.Fprintln(os.Stderr, usage); fs.PrintDefaults() }
	// Flags may come before, between or after the positional arguments.
	var positional []string
	for args := os.Args[1:]; ; {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				os.Exit(0)
			}
			os.Exit(2)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) < 2 || len(positional) > 3 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if !(*silence >= 0.1 && *silence <= 86400) { // NaN fails both
		fmt.Fprintf(os.Stderr, "rami-go-bot: --silence needs 0.1 to 86400 seconds, not %g\n", *silence)
		os.Exit(2)
	}
	name := "Go bot"
	if len(positional) == 3 {
		name = positional[2]
	}

	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*timeout*float64(time.Second)))
		defer cancel()
	}
	conn, err := grpc.Dial(positional[0], grpc.WithInsecure())
	if err != nil {
		fmt.Fprintf(os.Stderr, "rami-go-bot: %v\n", err)
		os.Exit(1)
	}
	b := &bot{
		lobby:   ramiv1.NewLobbyServiceClient(conn),
		table:   ramiv1.NewTableServiceClient(conn),
		rules:   ramiv1.NewRulesServiceClient(conn),
		tableID: positional[1],
		name:    name,
		token:   *token,
		quiet:   *quiet,
		silence: time.Duration(*silence * float64(time.Second)),
		seat:    -1,
	}
	code := play(ctx, b, *seat)
	conn.Close()
	os.Exit(code) // deferred calls do not run: close first
}

func play(ctx context.Context, b *bot, seat int) int {
	fail := func(err error) int {
		if ctx.Err() == context.DeadlineExceeded {
			fmt.Fprintln(os.Stderr, "rami-go-bot: the game did not end in time")
			return 3
		}
		fmt.Fprintf(os.Stderr, "rami-go-bot: %s\n", describe(err))
		return 1
	}
	if b.token == "" {
		var want *int32
		if seat >= 0 {
			want = proto.Int32(int32(seat))
		}
		if err := b.join(ctx, want); err != nil {
			return fail(err)
		}
	}
	view, err := b.run(ctx)
	if err != nil {
		return fail(err)
	}
	totals := make([]string, 0, len(view.GetPlayers()))
	for _, p := range view.GetPlayers() {
		totals = append(totals, fmt.Sprint(p.GetTotal()))
	}
	winners := make([]string, 0, len(view.GetWinners()))
	for _, w := range view.GetWinners() {
		winners = append(winners, fmt.Sprint(w))
	}
	s := b.stats
	fmt.Printf("rami-go-bot: seat %d: game over after %d rounds; totals %s; winners %s; "+
		"actions %d (lays %d), refused %d, aborted %d, rate-limited %d, reconnects %d\n",
		b.seat, len(view.GetResults()), strings.Join(totals, "/"), strings.Join(winners, ","),
		s.actions, s.lays, s.refused, s.aborted, s.limited, s.reconnects)
	return 0
}
