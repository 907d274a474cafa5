package io.kvrouter.server.grpc;

import io.kvrouter.api.Stages;
import io.kvrouter.api.v1.CandidateExplanation;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.FilteredRank;
import io.kvrouter.api.v1.WorkerEndpoint;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.explain.QueueWait;
import io.kvrouter.core.selection.RequestLimits;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * A model's last decisions as Admin.ExplainRecent and {@code GET /models/explain} show them: this node's Selects and
 * the model's Books from the node hosting its admission actor ({@link ModelClient#explainRecent}).
 */
public final class Explanations {
  private Explanations() {}

  /**
   * The decisions, newest first, or a failed stage (an empty model: INVALID_ARGUMENT EMPTY_MODEL; an unknown one:
   * NOT_FOUND UNKNOWN_MODEL).
   *
   * @param limit at most this many; 0: all kept
   */
  public static CompletionStage<ExplainReply> read(RouterCluster cluster, String model, int limit,
      Duration remaining) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(model);
      return cluster.client(model).explainRecent(limit, remaining);
    }).thenApplyAsync(Explanations::toProto, Stages.SAME_THREAD);
  }

  /** A uint32 limit as Java reads it (above 2^31 it is negative): beyond every bound, i.e. all kept. */
  public static int limit(int uint32) {
    return uint32 < 0 ? 0 : uint32;
  }

  static ExplainReply toProto(ModelClient.ExplainReport report) {
    ExplainReply.Builder reply = ExplainReply.newBuilder().setModel(report.model()).setNode(report.node());
    report.decisions().forEach(d -> reply.addDecisions(toProto(d)));
    return reply.build();
  }

  public static io.kvrouter.api.v1.Explanation toProto(Explanation e) {
    io.kvrouter.api.v1.Explanation.Builder out = io.kvrouter.api.v1.Explanation.newBuilder()
        .setKind(e.kind())
        .setUnixMs(e.unixMs())
        .setRequestId(e.requestId())
        .setPolicy(e.policy())
        .setViewVersion(e.viewVersion())
        .setRequestBlocks(e.requestBlocks())
        .setPicked(WorkerEndpoint.newBuilder()
            .setWorkerId(e.picked().workerId())
            .setDpRank(e.picked().dpRank())
            .setEndpoint(e.pickedEndpoint())
            .setRegion(e.pickedRegion()))
        .setPickedCost(e.pickedCost())
        .setHasRunnerUp(e.hasRunnerUp())
        .setRunnerUpCost(e.runnerUpCost())
        .setMargin(e.margin())
        .setNode(e.node())
        .setCandidatesTotal(e.candidatesTotal())
        .setFilteredTotal(e.filteredTotal());
    for (Explanation.CandidateExplanation c : e.candidates()) {
      out.addCandidates(CandidateExplanation.newBuilder()
          .setWorkerId(c.rank().workerId())
          .setDpRank(c.rank().dpRank())
          .setInFlight(c.inFlight())
          .setPrefillTokens(c.prefillTokens())
          .setDecodeBlocks(c.decodeBlocks())
          .setDeviceOverlap(c.deviceOverlap())
          .setHostOverlap(c.hostOverlap())
          .setDiskOverlap(c.diskOverlap())
          .setActiveMatched(c.activeMatched())
          .setCost(c.cost())
          .putAllCostTerms(c.costTerms())
          .setPicked(c.picked())
          .setRecentBookings(c.recentBookings()));
    }
    for (Explanation.FilteredRank f : e.filtered()) {
      out.addFiltered(FilteredRank.newBuilder()
          .setWorkerId(f.rank().workerId())
          .setDpRank(f.rank().dpRank())
          .setReason(f.reason()));
    }
    QueueWait q = e.queue();
    if (q != null) {
      out.setQueue(io.kvrouter.api.v1.QueueWait.newBuilder()
          .setPolicyClass(q.policyClass())
          .setStrictPriority(q.strictPriority())
          .setPriority(q.priority())
          .setReason(q.reason())
          .setBusyRanks(q.busyRanks())
          .setEligibleRanks(q.eligibleRanks())
          .setQueuedAhead(q.queuedAhead())
          .setUncachedTokens(q.uncachedTokens())
          .setAged(q.aged())
          .setWaitedMicros(q.waitedMicros())
          .setDispatchedBy(q.dispatchedBy()));
    }
    return out.build();
  }
}
