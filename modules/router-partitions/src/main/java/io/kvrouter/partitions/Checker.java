package io.kvrouter.partitions;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Checks a history of Book / MarkPrefillDone / Release calls against what one authoritative admission actor per
 * region would have answered, Jepsen-style: each call took effect at some instant between its invocation and its
 * completion; a call whose outcome is unknown (INFO) may or may not have taken effect.
 *
 * <ul>
 *   <li><b>lost</b>: a MarkPrefillDone or Release of an acknowledged booking answered {@code applied = false} although
 *       no Release of it (for MarkPrefillDone: no Release or other MarkPrefillDone) that may have taken effect
 *       (answered, or of unknown outcome; a refused one changed nothing) had been invoked before it completed, and
 *       its lease had not ended: the router forgot a booking it acknowledged.
 *   <li><b>rebooked</b>: a Book of a request id answered as a new booking (not a replay) while an earlier
 *       acknowledged booking of that id was certainly live: the earlier one was forgotten.
 *   <li><b>missing-after-heal</b> / <b>release-undone</b>: the post-heal audit (GetModelState, the clients quiet)
 *       lacks an acknowledged booking that was certainly live, or holds one whose Release was acknowledged as
 *       applied before the audit was sent.
 *   <li><b>over-admission</b>: per worker, bookings are certainly live from their Book's completion to the first
 *       invocation of their Release (or their lease's end); one owner admits a Book only while the worker is within
 *       its threshold, so more than {@code capacity} certainly-live bookings at one instant cannot happen under one
 *       authoritative owner.
 *   <li><b>duplicate-attempt</b>: two request ids acknowledged with the same attempt in one region.
 *   <li><b>left-behind</b>: a node's GetModelState after the final releases still lists a booking.
 * </ul>
 */
public final class Checker {

  /** What the checker is given besides the history. */
  public record Input(List<Op> ops, Map<String, Integer> capacityPerWorker, long leaseMs, List<LiveSet> audits,
      List<LiveSet> finals) {}

  public record Violation(String kind, String description, List<Op> history) {}

  public record Verdict(boolean valid, List<Violation> violations, Map<String, Integer> counts, String summary) {}

  private static final double NEVER = Double.POSITIVE_INFINITY;

  private final Input in;
  private final Map<BookingKey, List<Op>> byKey = new LinkedHashMap<>();
  private final Map<BookingKey, Double> firstAck = new HashMap<>();
  private final Map<BookingKey, Double> firstReleaseInvoke = new HashMap<>();
  private final Map<BookingKey, Double> leaseEnd = new HashMap<>();
  private final Map<BookingKey, String> workerOf = new HashMap<>();
  private final List<Violation> violations = new ArrayList<>();

  private Checker(Input in) {
    this.in = in;
  }

  public static Verdict check(Input in) {
    return new Checker(in).run();
  }

  private Verdict run() {
    index();
    checkLost();
    checkRebooked();
    checkAudits();
    checkOverAdmission();
    checkAttempts();
    checkFinals();
    Map<String, Integer> counts = new TreeMap<>();
    for (Violation v : violations) {
      counts.merge(v.kind(), 1, Integer::sum);
    }
    return new Verdict(violations.isEmpty(), violations, counts, summary());
  }

  private void index() {
    for (Op op : in.ops()) {
      if (op.f() == Op.F.SELECT) {
        continue;
      }
      if (op.f() == Op.F.BOOK) {
        if (!op.ok()) {
          continue;
        }
        BookingKey key = op.key();
        byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(op);
        firstAck.merge(key, op.completeMs(), Math::min);
        leaseEnd.merge(key, op.invokeMs() + in.leaseMs(), Math::max);
        workerOf.put(key, op.region() + "/" + op.worker());
      }
    }
    for (Op op : in.ops()) {
      if (op.f() == Op.F.PREFILL || op.f() == Op.F.RELEASE) {
        BookingKey key = op.key();
        List<Op> ops = byKey.get(key);
        if (ops == null) {
          continue; // never acknowledged: nothing to check it against
        }
        ops.add(op);
        if (op.f() == Op.F.RELEASE) {
          firstReleaseInvoke.merge(key, op.invokeMs(), Math::min);
        }
        if (op.f() == Op.F.PREFILL && op.ok() && op.applied()) {
          leaseEnd.merge(key, op.invokeMs() + in.leaseMs(), Math::max); // MarkPrefillDone renews the lease
        }
      }
    }
    byKey.values().forEach(l -> l.sort(Comparator.comparingDouble(Op::invokeMs)));
  }

  private void checkLost() {
    for (Map.Entry<BookingKey, List<Op>> e : byKey.entrySet()) {
      BookingKey key = e.getKey();
      for (Op x : e.getValue()) {
        if (x.f() == Op.F.BOOK || !x.ok() || x.applied()) {
          continue;
        }
        boolean excused = false;
        for (Op y : e.getValue()) {
          if (y == x || y.invokeMs() >= x.completeMs() || y.type() == Op.Type.FAIL) {
            continue; // a refused call changed nothing
          }
          if (y.f() == Op.F.RELEASE || (x.f() == Op.F.PREFILL && y.f() == Op.F.PREFILL)) {
            excused = true;
          }
        }
        if (!excused && leaseEnd.get(key) > x.invokeMs()) {
          violations.add(new Violation("lost", "booking " + key + " on " + workerOf.get(key) + " acknowledged at "
              + seconds(firstAck.get(key)) + " was unknown to the router at " + seconds(x.completeMs()) + " ("
              + x.f().name().toLowerCase() + " through n" + x.node() + " answered applied=false; no release had been"
              + " sent before)", history(key)));
          break;
        }
      }
    }
  }

  private void checkRebooked() {
    Map<String, List<BookingKey>> byRequest = new HashMap<>();
    for (BookingKey key : byKey.keySet()) {
      byRequest.computeIfAbsent(key.region() + "/" + key.requestId(), r -> new ArrayList<>()).add(key);
    }
    for (List<BookingKey> keys : byRequest.values()) {
      if (keys.size() < 2) {
        continue;
      }
      for (BookingKey later : keys) {
        for (Op book : byKey.get(later)) {
          if (book.f() != Op.F.BOOK || book.replay()) {
            continue;
          }
          for (BookingKey earlier : keys) {
            if (earlier.equals(later) || firstAck.get(earlier) >= book.invokeMs()) {
              continue;
            }
            double end = Math.min(firstReleaseInvoke.getOrDefault(earlier, NEVER), leaseEnd.get(earlier));
            if (end > book.completeMs()) {
              violations.add(new Violation("rebooked", "request " + earlier.requestId() + " was booked anew as "
                  + later + " at " + seconds(book.completeMs()) + " while its acknowledged booking " + earlier
                  + " was live (never released)", merge(history(earlier), history(later))));
            }
          }
        }
      }
    }
  }

  /**
   * Every node asks the admission actor, so the nodes' sets are normally one and the same: a booking is reported
   * once per kind, naming the first node that showed the problem.
   */
  private final Set<String> reported = new HashSet<>();

  private boolean firstReport(String kind, BookingKey key) {
    return reported.add(kind + " " + key);
  }

  private void checkAudits() {
    for (LiveSet audit : in.audits()) {
      for (BookingKey key : byKey.keySet()) {
        if (!key.region().equals(audit.region())) {
          continue;
        }
        boolean live = audit.bookings().containsKey(key);
        double acked = firstAck.get(key);
        double released = firstReleaseInvoke.getOrDefault(key, NEVER);
        if (!live && acked < audit.invokeMs() && released > audit.completeMs()
            && leaseEnd.get(key) > audit.completeMs() && firstReport("missing-after-heal", key)) {
          violations.add(new Violation("missing-after-heal", "acknowledged booking " + key + " on "
              + workerOf.get(key) + " (acknowledged at " + seconds(acked) + ", never released) is not in n"
              + audit.node() + "'s state at " + seconds(audit.completeMs()), history(key)));
        }
        if (live) {
          for (Op op : byKey.get(key)) {
            if (op.f() == Op.F.RELEASE && op.ok() && op.applied() && op.completeMs() < audit.invokeMs()
                && firstReport("release-undone", key)) {
              violations.add(new Violation("release-undone", "booking " + key + " released (applied) at "
                  + seconds(op.completeMs()) + " is live again in n" + audit.node() + "'s state at "
                  + seconds(audit.completeMs()), history(key)));
              break;
            }
          }
        }
      }
    }
  }

  private record Edge(double at, boolean start, BookingKey key) {}

  private void checkOverAdmission() {
    Map<String, List<Edge>> edges = new HashMap<>();
    for (BookingKey key : byKey.keySet()) {
      double start = firstAck.get(key);
      double end = Math.min(firstReleaseInvoke.getOrDefault(key, NEVER), leaseEnd.get(key));
      if (end <= start) {
        continue; // released before its Book's answer arrived: never certainly live
      }
      List<Edge> list = edges.computeIfAbsent(workerOf.get(key), w -> new ArrayList<>());
      list.add(new Edge(start, true, key));
      list.add(new Edge(end, false, key));
    }
    for (Map.Entry<String, List<Edge>> e : new TreeMap<>(edges).entrySet()) {
      String worker = e.getKey();
      Integer capacity = in.capacityPerWorker().get(worker);
      if (capacity == null) {
        continue;
      }
      List<Edge> list = e.getValue();
      // at one instant, ends before starts: a booking released as another is acknowledged is not concurrent with it
      list.sort(Comparator.comparingDouble(Edge::at).thenComparing(Edge::start));
      Set<BookingKey> live = new LinkedHashSet<>();
      Set<BookingKey> worst = Set.of();
      double worstAt = 0;
      for (Edge edge : list) {
        if (edge.start()) {
          live.add(edge.key());
          if (live.size() > capacity && live.size() > worst.size()) {
            worst = new LinkedHashSet<>(live);
            worstAt = edge.at();
          }
        } else {
          live.remove(edge.key());
        }
      }
      if (!worst.isEmpty()) {
        List<Op> history = new ArrayList<>();
        for (BookingKey key : worst) {
          history = merge(history, history(key));
        }
        violations.add(new Violation("over-admission", worker + " held " + worst.size()
            + " certainly-live acknowledged bookings at " + seconds(worstAt) + " (capacity " + capacity
            + "; one owner would have refused the last " + (worst.size() - capacity) + "): " + worst.stream()
            .map(k -> k + " acked by n" + ackNode(k)).collect(Collectors.joining(", ")), history));
      }
    }
  }

  private int ackNode(BookingKey key) {
    return byKey.get(key).stream().filter(op -> op.f() == Op.F.BOOK).findFirst().map(Op::node).orElse(0);
  }

  private void checkAttempts() {
    Map<String, Set<String>> byAttempt = new TreeMap<>();
    for (BookingKey key : byKey.keySet()) {
      byAttempt.computeIfAbsent(key.region() + "@" + key.attempt(), a -> new HashSet<>()).add(key.requestId());
    }
    for (Map.Entry<String, Set<String>> e : byAttempt.entrySet()) {
      if (e.getValue().size() > 1) {
        List<Op> history = new ArrayList<>();
        for (BookingKey key : byKey.keySet()) {
          if ((key.region() + "@" + key.attempt()).equals(e.getKey())) {
            history = merge(history, history(key));
          }
        }
        violations.add(new Violation("duplicate-attempt", "attempt " + e.getKey() + " was acknowledged for "
            + e.getValue().size() + " request ids: " + new TreeSet<>(e.getValue()), history));
      }
    }
  }

  private void checkFinals() {
    for (LiveSet fin : in.finals()) {
      for (Map.Entry<BookingKey, String> e : fin.bookings().entrySet()) {
        BookingKey key = e.getKey();
        if (!firstReport("left-behind", key)) {
          continue;
        }
        List<Op> history = byKey.getOrDefault(key, List.of());
        if (history.isEmpty()) {
          history = in.ops().stream().filter(op -> op.requestId().equals(key.requestId())).toList();
        }
        violations.add(new Violation("left-behind", "n" + fin.node() + " still lists booking " + key + " on "
            + fin.region() + "/" + e.getValue() + " at " + seconds(fin.completeMs()) + " after the final releases",
            history));
      }
    }
  }

  private List<Op> history(BookingKey key) {
    List<Op> ops = new ArrayList<>(byKey.getOrDefault(key, List.of()));
    // the Book calls of the same request id that did not answer OK belong to its story too
    for (Op op : in.ops()) {
      if (op.f() == Op.F.BOOK && !op.ok() && op.requestId().equals(key.requestId())) {
        ops.add(op);
      }
    }
    ops.sort(Comparator.comparingDouble(Op::invokeMs));
    return ops;
  }

  private static List<Op> merge(List<Op> a, List<Op> b) {
    Set<Op> all = new LinkedHashSet<>(a);
    all.addAll(b);
    List<Op> out = new ArrayList<>(all);
    out.sort(Comparator.comparingDouble(Op::invokeMs));
    return out;
  }

  private String summary() {
    Map<String, Integer> calls = new TreeMap<>();
    for (Op op : in.ops()) {
      calls.merge(op.f().name().toLowerCase() + " " + op.type(), 1, Integer::sum);
    }
    Map<Integer, Integer> acksByNode = new TreeMap<>();
    for (List<Op> ops : byKey.values()) {
      ops.stream().filter(op -> op.f() == Op.F.BOOK).findFirst()
          .ifPresent(op -> acksByNode.merge(op.node(), 1, Integer::sum));
    }
    return in.ops().size() + " calls " + calls + "; " + byKey.size() + " acknowledged bookings (first acknowledged"
        + " through node " + acksByNode + ")";
  }

  static String seconds(double ms) {
    return String.format("%.3fs", ms / 1000);
  }

  /** The verdict as the harness prints it: the verdict line, the counts, then each violation with its history. */
  public static String render(Verdict verdict, int maxPerKind) {
    StringBuilder sb = new StringBuilder();
    sb.append(verdict.valid() ? "VERDICT: VALID" : "VERDICT: INVALID " + verdict.counts()).append('\n');
    sb.append(verdict.summary()).append('\n');
    Map<String, Integer> shown = new HashMap<>();
    for (Violation v : verdict.violations()) {
      int n = shown.merge(v.kind(), 1, Integer::sum);
      if (n > maxPerKind) {
        continue;
      }
      sb.append('\n').append(v.kind()).append(": ").append(v.description()).append('\n');
      sb.append("      invoked   completed  node process   call\n");
      for (Op op : v.history()) {
        sb.append("  ").append(op.line()).append('\n');
      }
    }
    for (Map.Entry<String, Integer> e : verdict.counts().entrySet()) {
      if (e.getValue() > maxPerKind) {
        sb.append("\n(").append(e.getValue() - maxPerKind).append(" more ").append(e.getKey())
            .append(" violations in the run's verdict file)\n");
      }
    }
    return sb.toString();
  }
}
