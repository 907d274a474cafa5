package io.kvrouter.cluster.models;

import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.indexer.KvEventSequencer;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.DisaggregatedSelection;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Everything this node keeps for one model while it holds it: the node's view (an {@code AtomicReference}
 * inline Selects read), the model's admission actor while it runs here, the KV index and the sequencer that feeds
 * it, the decision log (explain) and this node's replica of an owner that runs elsewhere. {@link ModelSlots} creates
 * and removes slots; nothing else keeps per-model state, so forgetting a model is removing its slot.
 *
 * @param <C> the admission actor's command type
 */
public final class ModelSlot<C> {
  private final String model;
  private final AtomicReference<SelectionView> view = new AtomicReference<>();
  private final AtomicReference<ActorRef<C>> localAdmission = new AtomicReference<>();
  private final ModelKvIndex kvIndex;
  private final KvEventSequencer sequencer;
  /** Null when the node records no decisions. */
  private final DecisionLog decisions;
  private final LongSupplier clock;
  private final String node;
  /** Read and written only by the node's replica actor. */
  private ModelReplica replica;

  ModelSlot(String model, ModelKvIndex kvIndex, KvEventSequencer.Settings reorder, DecisionLog decisions,
      LongSupplier clock, String node) {
    this.model = model;
    this.kvIndex = kvIndex;
    this.sequencer = new KvEventSequencer(kvIndex, reorder, clock);
    this.decisions = decisions;
    this.clock = clock;
    this.node = node;
  }

  public String model() {
    return model;
  }

  /** The node's current view of the model, or null before one was published. */
  public SelectionView view() {
    return view.get();
  }

  /** A model is known while its view has a worker. */
  public boolean isKnown() {
    SelectionView current = view.get();
    return current != null && !current.isEmpty();
  }

  /**
   * Installs {@code next} if it is newer by {@code (epoch, version)} than the current view, whoever publishes it
   * (the local actor or the node's replica): a late view of an old incarnation never overwrites its successor's.
   */
  public boolean publish(SelectionView next) {
    while (true) {
      SelectionView current = view.get();
      if (!next.isNewerThan(current)) {
        return false;
      }
      if (view.compareAndSet(current, next)) {
        return true;
      }
    }
  }

  /** The model's admission actor while it runs on this node, else null. */
  public ActorRef<C> localAdmission() {
    return localAdmission.get();
  }

  /** Whether the model's admission actor runs on this node now. */
  public boolean hostsAdmission() {
    return localAdmission.get() != null;
  }

  /** The admission actor started on this node. */
  public void admissionStarted(ActorRef<C> actor) {
    localAdmission.set(actor);
  }

  /** The admission actor stopped (or is passivating): clears the reference unless a newer incarnation took it. */
  public void admissionStopped(ActorRef<C> actor) {
    localAdmission.compareAndSet(actor, null);
  }

  /** This node's KV index of the model: event-fed per worker once it publishes, approximate before. */
  public ModelKvIndex kvIndex() {
    return kvIndex;
  }

  /** Puts each (worker, rank)'s events back in event-id order before they reach {@link #kvIndex}. */
  public KvEventSequencer sequencer() {
    return sequencer;
  }

  /** The node's decisions about the model, or null when it records none. */
  public DecisionLog decisions() {
    return decisions;
  }

  /** This node's copy of the owner's state, or null; only the replica actor calls this. */
  public ModelReplica replica() {
    return replica;
  }

  /** Only the replica actor calls this. */
  public void setReplica(ModelReplica replica) {
    this.replica = replica;
  }

  /**
   * The advisory pick on {@code current} (the view the caller read once, and hashed the request for): project loads
   * into this thread's scratch, pick under the picker lock; recorded when the node records decisions.
   */
  public SelectionResult select(SelectionView current, SelectionRequest request) {
    Candidates scratch = Candidates.forCurrentThread();
    Candidates decodeScratch = Candidates.decodeForCurrentThread();
    SelectionResult result = DisaggregatedSelection.select(current, request, scratch, decodeScratch, clock);
    if (decisions != null) {
      long now = clock.getAsLong();
      decisions.record(DecisionKind.SELECT, current, request, scratch, now);
      if (result.disaggregated()) {
        decisions.record(DecisionKind.SELECT_DECODE, current,
            DisaggregatedSelection.half(current, request, WorkerRole.DECODE), decodeScratch, now);
      }
    }
    return result;
  }

  /** As {@link #select}, with the decision's explanation for a caller that asked (recorded or not). */
  public ExplainedSelection selectExplained(SelectionView current, SelectionRequest request) {
    Candidates scratch = Candidates.forCurrentThread();
    Candidates decodeScratch = Candidates.decodeForCurrentThread();
    SelectionResult result = DisaggregatedSelection.select(current, request, scratch, decodeScratch, clock);
    long now = clock.getAsLong();
    SelectionRequest decodeRequest = result.disaggregated()
        ? DisaggregatedSelection.half(current, request, WorkerRole.DECODE) : null;
    if (decisions != null) {
      decisions.record(DecisionKind.SELECT, current, request, scratch, now);
      if (decodeRequest != null) {
        decisions.record(DecisionKind.SELECT_DECODE, current, decodeRequest, decodeScratch, now);
      }
    }
    return new ExplainedSelection(result,
        Decision.capture(DecisionKind.SELECT, current, request, scratch, now).explain(node),
        decodeRequest == null ? null
            : Decision.capture(DecisionKind.SELECT_DECODE, current, decodeRequest, decodeScratch, now).explain(node));
  }

  /** An advisory pick and why it was made; {@code decodeExplanation}: a pair's decode half's, else null. */
  public record ExplainedSelection(SelectionResult result, Explanation explanation, Explanation decodeExplanation) {}
}
