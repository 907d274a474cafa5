package io.kvrouter.core.replication;

import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Compares an owner's admission state with a replica's copy, field by field, as text that names what differs. */
final class Copies {
  private Copies() {}

  /** What the owner holds, in a form equal to {@link #ofReplica} exactly when the copy is faithful. */
  static Map<String, Object> ofOwner(AdmissionState owner, List<long[]> probes) {
    Map<String, Object> state = new TreeMap<>();
    ViewState view = owner.viewState();
    state.put("view", describe(view));
    ModelSnapshot snapshot = owner.snapshot();
    Map<String, String> loads = new TreeMap<>();
    for (ModelSnapshot.WorkerSnapshot worker : snapshot.workers()) {
      for (ModelSnapshot.RankSnapshot rank : worker.ranks()) {
        loads.put(worker.config().workerId() + "#" + rank.dpRank(), rank.load() + " " + rank.reported());
      }
    }
    state.put("loads", loads);
    state.put("bookings", bookings(owner.ledgerSnapshot().bookings()));
    state.put("highestAttempt", owner.ledgerSnapshot().highestAttempt());
    state.put("activePrefix", activePrefix(owner.view(), probes));
    state.put("queued", owner.queuedBooks().toString());
    state.put("sessions", sessions(owner.sessionBindings()));
    return state;
  }

  static Map<String, Object> ofReplica(ModelReplica replica, List<long[]> probes) {
    Map<String, Object> state = new TreeMap<>();
    RecoveredState copy = replica.recoveredState();
    if (copy == null) {
      state.put("empty", true);
      return state;
    }
    state.put("view", describe(copy.view()));
    Map<String, String> loads = new TreeMap<>();
    for (RankRecord load : copy.loads()) {
      loads.put(load.workerId() + "#" + load.dpRank(), load.booked() + " " + load.reported());
    }
    state.put("loads", loads);
    state.put("bookings", bookings(copy.ledger().bookings()));
    state.put("highestAttempt", copy.ledger().highestAttempt());
    state.put("activePrefix", activePrefix(replica.view(), probes));
    state.put("queued", copy.queued().toString());
    state.put("sessions", sessions(copy.sessions()));
    return state;
  }

  /** The owner's state as a replica that is up to date would show it ("empty" when it has no worker). */
  static Map<String, Object> expected(AdmissionState owner, List<long[]> probes) {
    return owner.viewState().workers().isEmpty() ? Map.of("empty", true) : ofOwner(owner, probes);
  }

  private static Map<String, String> sessions(List<SessionBinding> bindings) {
    Map<String, String> out = new TreeMap<>();
    for (SessionBinding binding : bindings) {
      out.put(binding.sessionId(), binding.toString());
    }
    return out;
  }

  private static String describe(ViewState view) {
    return view.model() + " epoch " + view.epoch() + " v" + view.version() + " " + view.workers() + " "
        + view.policy() + " " + new TreeMap<>(view.parameters());
  }

  static Map<String, String> bookings(List<LedgerSnapshot.Entry> entries) {
    Map<String, String> out = new TreeMap<>();
    for (LedgerSnapshot.Entry e : entries) {
      out.put(e.requestId(), e.attempt() + " " + e.rank() + " prefill " + e.prefillTokens() + " decode "
          + e.decodeBlocks() + " done " + e.prefillDone() + " lease " + e.leaseExpiresAtMillis() + " at "
          + e.bookedAtMillis() + " queued " + e.queuedMicros() + " hashes " + Arrays.toString(e.sequenceHashes())
          + " selection " + e.selection());
    }
    return out;
  }

  /** Per rank of the view and probe, how deep the view's active-prefix index matches the probe's hashes. */
  private static Map<String, Integer> activePrefix(SelectionView view, List<long[]> probes) {
    ActivePrefixIndex index = (ActivePrefixIndex) view.activePrefix();
    Map<String, Integer> out = new TreeMap<>();
    for (int r = 0; r < view.rankCount(); r++) {
      Rank rank = view.rank(r);
      for (int p = 0; p < probes.size(); p++) {
        out.put(rank + " probe " + p, index.matchedDepth(rank, probes.get(p)));
      }
    }
    return out;
  }
}
