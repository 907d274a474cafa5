package io.kvrouter.partitions;

import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.api.v1.Selection;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The client loops: each is attached to one node (its side of a partition) and repeats Book → MarkPrefillDone →
 * hold → Release through it, recording every call in the history. Bounded in calls and stopped by the runner.
 *
 * <ul>
 *   <li>A Book whose outcome is unknown (timeout, connection lost) is retried with the same request id (a replay)
 *       through the next node, up to {@code BOOK_RETRIES} times; a request id still unknown after that is reclaimed
 *       in the final phase. MarkPrefillDone and Release go first to the node that answered the Book.
 *   <li>A Release that fails is retried through the loop's node and then the others in turn until one answers.
 *   <li>When the runner quiesces the loops, a loop in the middle of a hold keeps its booking: the audit must find it,
 *       and the final phase releases it.
 * </ul>
 */
public final class Clients {
  private static final int BOOK_RETRIES = 2;
  private static final int MAX_CALLS_PER_LOOP = 100_000;

  /**
   * How long loops hold their bookings: {@code keepFraction} of those booked during the fault until the runner
   * quiesces the loops (the audit after the heal must find them), {@code longFraction} uniformly in [longMin, longMax], the rest in
   * [shortMin, shortMax].
   */
  public record Holds(long shortMinMs, long shortMaxMs, double longFraction, long longMinMs, long longMaxMs,
      double keepFraction) {}

  /** A booking a loop holds, to release it later. */
  public record Held(BookingKey key, String process) {}

  private final History history;
  private final Rpc rpc;
  private final Nodes nodes;
  private final long callTimeoutMs;
  private final Holds holds;
  private final AtomicBoolean quiesce = new AtomicBoolean();
  private final AtomicBoolean lull = new AtomicBoolean();
  private final AtomicBoolean drain = new AtomicBoolean();
  private final AtomicBoolean keeping = new AtomicBoolean();
  private final List<Thread> threads = new ArrayList<>();
  private final ConcurrentLinkedQueue<Held> held = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> unknownBooks = new ConcurrentLinkedQueue<>();

  public Clients(History history, Rpc rpc, Nodes nodes, long callTimeoutMs, Holds holds) {
    this.history = history;
    this.rpc = rpc;
    this.nodes = nodes;
    this.callTimeoutMs = callTimeoutMs;
    this.holds = holds;
  }

  /** Starts {@code perNode} loops on every node; loops on nodes of {@code globalRegions} Book and Select globally. */
  public void start(int perNode, List<String> globalRegions, long seed) {
    int id = 0;
    for (int node : nodes.all()) {
      boolean global = globalRegions.contains(nodes.region(node));
      for (int i = 0; i < perNode; i++) {
        String name = "c" + (++id);
        Loop loop = new Loop(name, node, global, new Random(seed * 1000 + id));
        Thread t = new Thread(loop, "client-" + name);
        t.setDaemon(true);
        threads.add(t);
        t.start();
      }
    }
  }

  /** Stops the loops after their current call; their held bookings stay held. Waits for them to end. */
  public void quiesce(long timeoutMs) {
    quiesce.set(true);
    long deadline = System.currentTimeMillis() + timeoutMs;
    for (Thread t : threads) {
      try {
        t.join(Math.max(1, deadline - System.currentTimeMillis()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * While on, the loops start no new Book; with {@code drain} they also cut their holds short and release at once.
   * The runner calls a lull just before a fault, so that the fault meets a ledger with room (drained: an empty one),
   * as an ebb of real load would: what the checker then finds was made during the fault.
   */
  public void lull(boolean on, boolean drain) {
    this.drain.set(drain);
    lull.set(on);
  }

  /** While on (the runner turns it on for the fault), {@code keepFraction} of new bookings are kept to the end. */
  public void keeping(boolean on) {
    keeping.set(on);
  }

  public List<Held> held() {
    return new ArrayList<>(held);
  }

  public List<String> unknownBooks() {
    return new ArrayList<>(unknownBooks);
  }

  public RouteRequest request(String requestId, boolean global) {
    return RouteRequest.newBuilder().setModel(Fleet.MODEL).setRequestId(requestId).setIslTokens(Fleet.ISL_TOKENS)
        .setExpectedOutputTokens(64).setScope(global ? Scope.SCOPE_GLOBAL : Scope.SCOPE_REGION).build();
  }

  /** A Book, recorded in the history; returns its record (OK with the booking, FAIL or INFO). */
  public Op book(String process, int node, String requestId, boolean global) {
    double t0 = history.nowMs();
    try {
      Booking b = rpc.router(node, callTimeoutMs).book(request(requestId, global));
      String region = b.getRegion().isEmpty() ? nodes.region(node) : b.getRegion();
      return history.add(process, node, Op.F.BOOK, requestId, 0, "", global, t0, Op.Type.OK, b.getAttempt(),
          b.getSelection().getWorker().getWorkerId(), region, b.getReplay(), false, "");
    } catch (StatusRuntimeException e) {
      return history.add(process, node, Op.F.BOOK, requestId, 0, "", global, t0,
          Rpc.definite(e) ? Op.Type.FAIL : Op.Type.INFO, 0, "", "", false, false, Rpc.error(e));
    }
  }

  public Op select(String process, int node, String requestId, boolean global) {
    double t0 = history.nowMs();
    try {
      Selection s = rpc.router(node, callTimeoutMs).select(request(requestId, global));
      return history.add(process, node, Op.F.SELECT, requestId, 0, "", global, t0, Op.Type.OK, 0,
          s.getWorker().getWorkerId(), s.getRegion(), false, false, "");
    } catch (StatusRuntimeException e) {
      return history.add(process, node, Op.F.SELECT, requestId, 0, "", global, t0,
          Rpc.definite(e) ? Op.Type.FAIL : Op.Type.INFO, 0, "", "", false, false, Rpc.error(e));
    }
  }

  private BookingRef ref(BookingKey key) {
    return BookingRef.newBuilder().setModel(Fleet.MODEL).setRequestId(key.requestId()).setAttempt(key.attempt())
        .setRegion(key.region()).build();
  }

  public Op release(String process, int node, BookingKey key) {
    double t0 = history.nowMs();
    try {
      Released r = rpc.router(node, callTimeoutMs).release(ref(key));
      return history.add(process, node, Op.F.RELEASE, key.requestId(), key.attempt(), key.region(), false, t0,
          Op.Type.OK, 0, "", "", false, r.getApplied(), "");
    } catch (StatusRuntimeException e) {
      return history.add(process, node, Op.F.RELEASE, key.requestId(), key.attempt(), key.region(), false, t0,
          Rpc.definite(e) ? Op.Type.FAIL : Op.Type.INFO, 0, "", "", false, false, Rpc.error(e));
    }
  }

  public Op markPrefillDone(String process, int node, BookingKey key) {
    double t0 = history.nowMs();
    try {
      PrefillMarked r = rpc.router(node, callTimeoutMs).markPrefillDone(ref(key));
      return history.add(process, node, Op.F.PREFILL, key.requestId(), key.attempt(), key.region(), false, t0,
          Op.Type.OK, 0, "", "", false, r.getApplied(), "");
    } catch (StatusRuntimeException e) {
      return history.add(process, node, Op.F.PREFILL, key.requestId(), key.attempt(), key.region(), false, t0,
          Rpc.definite(e) ? Op.Type.FAIL : Op.Type.INFO, 0, "", "", false, false, Rpc.error(e));
    }
  }

  /**
   * Releases {@code key} through {@code first}, then the other nodes in turn, until a Release is answered or
   * {@code untilMs} (history clock) passes; returns whether one was answered.
   */
  public boolean releaseUntilAnswered(String process, int first, BookingKey key, double untilMs) {
    List<Integer> order = new ArrayList<>(nodes.all());
    int start = order.indexOf(first);
    for (int i = 0; history.nowMs() < untilMs; i++) {
      int node = order.get((start + i) % order.size());
      if (release(process, node, key).ok()) {
        return true;
      }
      pause(200);
    }
    return false;
  }

  private static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private final class Loop implements Runnable {
    private final String name;
    private final int node;
    private final boolean global;
    private final Random random;
    private int seq;

    Loop(String name, int node, boolean global, Random random) {
      this.name = name;
      this.node = node;
      this.global = global;
      this.random = random;
    }

    @Override
    public void run() {
      int calls = 0;
      int failedInARow = 0;
      while (!quiesce.get() && calls < MAX_CALLS_PER_LOOP) {
        if (lull.get()) {
          pause(50);
          continue;
        }
        String requestId = name + "-" + (++seq);
        if (global) {
          select(name, node, requestId, true);
          calls++;
        }
        Op booked = null;
        List<Integer> all = nodes.all();
        for (int attempt = 0; attempt <= BOOK_RETRIES && !quiesce.get(); attempt++) {
          // a retry goes to the next node, as a client with several router endpoints would
          int via = all.get((all.indexOf(node) + attempt) % all.size());
          Op op = book(name, via, requestId, global);
          calls++;
          if (op.type() != Op.Type.INFO) {
            booked = op.ok() ? op : null;
            break;
          }
          if (attempt == BOOK_RETRIES) {
            unknownBooks.add(requestId);
          }
          pause(100);
        }
        if (booked == null) {
          if (quiesce.get() && !unknownBooks.contains(requestId)) {
            // a Book cut short by the quiesce may still have booked: reclaim it too
            unknownBooks.add(requestId);
          }
          // back off while Books fail (overloaded workers; a node partitioned, or downed and not restarted yet)
          failedInARow = Math.min(failedInARow + 1, 3);
          pause((50 + random.nextInt(100)) << failedInARow);
          continue;
        }
        failedInARow = 0;
        BookingKey key = booked.key();
        markPrefillDone(name, booked.node(), key);
        calls++;
        if (!hold()) {
          held.add(new Held(key, name));
          return;
        }
        // the quiesce may come while a Release is being retried: the final phase takes it over then
        boolean released = false;
        while (!released && !quiesce.get()) {
          released = releaseUntilAnswered(name, booked.node(), key, history.nowMs() + 3 * callTimeoutMs);
          calls++;
        }
        if (!released) {
          held.add(new Held(key, name));
          return;
        }
      }
    }

    /** Sleeps for the booking's hold; false when the quiesce cut it short (the booking is then kept). */
    private boolean hold() {
      double draw = random.nextDouble();
      if (keeping.get() && draw < holds.keepFraction()) {
        while (!quiesce.get()) {
          pause(100);
        }
        return false;
      }
      long ms = draw < holds.keepFraction() + holds.longFraction()
          ? holds.longMinMs() + (long) (random.nextDouble() * (holds.longMaxMs() - holds.longMinMs()))
          : holds.shortMinMs() + (long) (random.nextDouble() * (holds.shortMaxMs() - holds.shortMinMs()));
      long end = System.currentTimeMillis() + ms;
      while (System.currentTimeMillis() < end) {
        if (quiesce.get()) {
          return false;
        }
        if (lull.get() && drain.get()) {
          return true;
        }
        pause(Math.min(100, Math.max(1, end - System.currentTimeMillis())));
      }
      return true;
    }
  }
}
