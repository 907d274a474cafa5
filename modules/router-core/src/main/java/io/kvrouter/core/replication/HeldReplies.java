package io.kvrouter.core.replication;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Answers the owner holds until a majority of its region holds what they acknowledge: each is held ({@link #hold})
 * when its command changed the state, sealed under the seq of the last delta a flush drained ({@link #seal}: every
 * change made before then travels in deltas up to that seq), and sent once enough peers acknowledged that seq
 * ({@link #release}). A Book, Release, MarkPrefillDone or Renew answered this way survives the owner's failure: the
 * next incarnation recovers from a majority of copies, one of which holds it.
 *
 * <p>Not thread-safe: the owner's actor calls it.
 */
public final class HeldReplies {
  private record Sealed(long seq, List<Runnable> replies) {}

  private List<Runnable> unsealed = new ArrayList<>();
  private final ArrayDeque<Sealed> sealed = new ArrayDeque<>();
  private int held;

  /** Holds {@code reply} (it sends the answer) until the changes made so far are acknowledged. */
  public void hold(Runnable reply) {
    unsealed.add(reply);
    held++;
  }

  /** Replies held since the last {@link #seal}: a flush must carry their changes. */
  public boolean hasUnsealed() {
    return !unsealed.isEmpty();
  }

  /** Replies sealed and waiting for acknowledgements. */
  public boolean awaitingAcks() {
    return !sealed.isEmpty();
  }

  /** Answers held now, sealed or not. */
  public int size() {
    return held;
  }

  /** A flush drained every change so far in deltas up to {@code seq}: the replies held until now wait for it. */
  public void seal(long seq) {
    if (unsealed.isEmpty()) {
      return;
    }
    Sealed last = sealed.peekLast();
    if (last != null && last.seq() == seq) {
      last.replies().addAll(unsealed);
      unsealed.clear();
    } else {
      sealed.addLast(new Sealed(seq, unsealed));
      unsealed = new ArrayList<>();
    }
  }

  /** Sends every reply sealed under a seq up to {@code ackedSeq}; returns how many. */
  public int release(long ackedSeq) {
    int sent = 0;
    while (!sealed.isEmpty() && sealed.peekFirst().seq() <= ackedSeq) {
      for (Runnable reply : sealed.pollFirst().replies()) {
        reply.run();
        sent++;
      }
    }
    held -= sent;
    return sent;
  }

  /** Drops every reply held (the owner stops: its callers time out and retry); returns how many. */
  public int dropAll() {
    int dropped = held;
    unsealed.clear();
    sealed.clear();
    held = 0;
    return dropped;
  }
}
