package io.kvrouter.core.indexer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * Random event sequences applied to the index and to a deliberately naive model (per rank, a map from block path to
 * tiers, walked prefix by prefix) must agree on every overlap, on the block and entry counts, and through the
 * selection path. Blocks live in a tiny alphabet (3 symbols, depth ≤ 6) so sequences collide, branch, re-store and
 * remove the same blocks often; event ids sometimes repeat (ignored) or skip (the rank is cleared).
 */
class KvIndexPropertyTest {
  static final List<Rank> RANKS = List.of(new Rank("a", 0), new Rank("a", 1), new Rank("b", 0));
  static final StorageTier[] TIERS = StorageTier.values();

  enum Kind { STORE, REMOVE, CLEAR, REMOVE_WORKER }

  /** One event; {@code idStep} is the event-id increment: 1 normally, 0 a duplicate, 2 a gap. */
  record Op(Kind kind, int rank, StorageTier tier, List<Integer> parent, List<Integer> ext,
      List<List<Integer>> paths, int idStep) {}

  static long tokensHash(List<Integer> path) {
    long h = 1;
    for (int s : path) {
      h = h * 5 + s;
    }
    return h * 0x9E3779B97F4A7C15L; // bijective: distinct paths, distinct hashes
  }

  static long blockHash(int rank, List<Integer> path) {
    return tokensHash(path) ^ (0x5A5A_0000_0000_0000L + rank * 0x1234_5678L + 1); // salted per rank
  }

  static Arbitrary<List<Integer>> paths(int min, int max) {
    return Arbitraries.integers().between(1, 3).list().ofMinSize(min).ofMaxSize(max);
  }

  @Provide
  Arbitrary<List<Op>> ops() {
    Arbitrary<Integer> rank = Arbitraries.integers().between(0, RANKS.size() - 1);
    Arbitrary<StorageTier> tier = Arbitraries.frequency(
        Tuple.of(3, StorageTier.DEVICE), Tuple.of(1, StorageTier.HOST), Tuple.of(1, StorageTier.DISK));
    Arbitrary<Integer> idStep = Arbitraries.frequency(Tuple.of(20, 1), Tuple.of(1, 0), Tuple.of(1, 2));
    Arbitrary<Op> store = Combinators.combine(rank, tier, paths(0, 3), paths(1, 3), idStep)
        .as((r, t, parent, ext, step) -> new Op(Kind.STORE, r, t, parent, ext, List.of(), step));
    Arbitrary<Op> remove = Combinators.combine(rank, tier, paths(1, 5).list().ofMinSize(1).ofMaxSize(3), idStep)
        .as((r, t, ps, step) -> new Op(Kind.REMOVE, r, t, List.of(), List.of(), ps, step));
    Arbitrary<Op> clear = Combinators.combine(rank, idStep)
        .as((r, step) -> new Op(Kind.CLEAR, r, StorageTier.DEVICE, List.of(), List.of(), List.of(), step));
    Arbitrary<Op> removeWorker = rank
        .map(r -> new Op(Kind.REMOVE_WORKER, r, StorageTier.DEVICE, List.of(), List.of(), List.of(), 1));
    return Arbitraries.frequencyOf(Tuple.of(12, store), Tuple.of(5, remove), Tuple.of(1, clear),
        Tuple.of(1, removeWorker)).list().ofMinSize(1).ofMaxSize(80);
  }

  @Provide
  Arbitrary<List<List<Integer>>> queries() {
    return paths(0, 7).list().ofMinSize(1).ofMaxSize(25);
  }

  /** The reference: per rank, path → tiers, plus the event-id sequence. */
  static final class Model {
    final Map<Integer, Map<List<Integer>, EnumSet<StorageTier>>> blocks = new HashMap<>();
    final Map<Integer, Long> lastId = new HashMap<>();
    long gaps;

    Map<List<Integer>, EnumSet<StorageTier>> of(int rank) {
      return blocks.computeIfAbsent(rank, r -> new HashMap<>());
    }

    void apply(Op op, long id) {
      Long last = lastId.get(op.rank());
      if (last != null) {
        if (id <= last) {
          return;
        }
        if (id != last + 1) {
          of(op.rank()).clear();
          gaps++;
        }
      }
      lastId.put(op.rank(), id);
      Map<List<Integer>, EnumSet<StorageTier>> m = of(op.rank());
      switch (op.kind()) {
        case STORE -> {
          if (!op.parent().isEmpty() && !m.containsKey(op.parent())) {
            return;
          }
          List<Integer> at = op.parent();
          for (int s : op.ext()) {
            List<Integer> next = new ArrayList<>(at);
            next.add(s);
            m.computeIfAbsent(List.copyOf(next), p -> EnumSet.noneOf(StorageTier.class)).add(op.tier());
            at = next;
          }
        }
        case REMOVE -> {
          for (List<Integer> p : op.paths()) {
            EnumSet<StorageTier> tiers = m.get(p);
            if (tiers == null) {
              continue;
            }
            tiers.remove(op.tier());
            if (tiers.isEmpty()) {
              m.keySet().removeIf(k -> k.size() >= p.size() && k.subList(0, p.size()).equals(p));
            }
          }
        }
        case CLEAR -> m.clear();
        default -> throw new IllegalStateException();
      }
    }

    void removeWorker(String worker) {
      for (int r = 0; r < RANKS.size(); r++) {
        if (RANKS.get(r).workerId().equals(worker)) {
          blocks.remove(r);
          lastId.remove(r);
        }
      }
    }

    TieredOverlap overlap(int rank, List<Integer> query) {
      Map<List<Integer>, EnumSet<StorageTier>> m = blocks.getOrDefault(rank, Map.of());
      int k = 0;
      while (k < query.size() && tiers(m, query, k).contains(StorageTier.DEVICE)) {
        k++;
      }
      int device = k;
      while (k < query.size() && (tiers(m, query, k).contains(StorageTier.DEVICE)
          || tiers(m, query, k).contains(StorageTier.HOST))) {
        k++;
      }
      int host = k - device;
      while (k < query.size() && !tiers(m, query, k).isEmpty()) {
        k++;
      }
      return new TieredOverlap(device, host, k - device - host);
    }

    private static Set<StorageTier> tiers(Map<List<Integer>, EnumSet<StorageTier>> m, List<Integer> query, int k) {
      EnumSet<StorageTier> t = m.get(query.subList(0, k + 1));
      return t == null ? Set.of() : t;
    }
  }

  static KvEvent event(Op op) {
    return switch (op.kind()) {
      case STORE -> {
        long[] blockHashes = new long[op.ext().size()];
        long[] tokensHashes = new long[op.ext().size()];
        List<Integer> at = new ArrayList<>(op.parent());
        for (int i = 0; i < op.ext().size(); i++) {
          at.add(op.ext().get(i));
          blockHashes[i] = blockHash(op.rank(), at);
          tokensHashes[i] = tokensHash(at);
        }
        Long parent = op.parent().isEmpty() ? null : blockHash(op.rank(), op.parent());
        yield new KvEvent.Stored(op.tier(), parent, blockHashes, tokensHashes);
      }
      case REMOVE -> new KvEvent.Removed(op.tier(),
          op.paths().stream().mapToLong(p -> blockHash(op.rank(), p)).toArray());
      case CLEAR -> KvEvent.Cleared.INSTANCE;
      default -> throw new IllegalStateException();
    };
  }

  static long[] hashes(List<Integer> query) {
    long[] out = new long[query.size()];
    for (int i = 0; i < query.size(); i++) {
      out[i] = tokensHash(query.subList(0, i + 1));
    }
    return out;
  }

  @Property(tries = 400)
  void indexAgreesWithNaiveModel(@ForAll("ops") List<Op> ops, @ForAll("queries") List<List<Integer>> queries) {
    KvIndex index = new KvIndex();
    Model model = new Model();
    Map<Integer, Long> nextId = new HashMap<>();
    for (Op op : ops) {
      if (op.kind() == Kind.REMOVE_WORKER) {
        String worker = RANKS.get(op.rank()).workerId();
        index.removeWorker(worker);
        model.removeWorker(worker);
        for (int r = 0; r < RANKS.size(); r++) {
          if (RANKS.get(r).workerId().equals(worker)) {
            nextId.remove(r);
          }
        }
        continue;
      }
      long id = nextId.getOrDefault(op.rank(), 1000L) + op.idStep() - 1;
      nextId.put(op.rank(), Math.max(id + 1, nextId.getOrDefault(op.rank(), 1000L)));
      index.apply(RANKS.get(op.rank()), id, event(op));
      model.apply(op, id);
    }

    assertThat(index.gapCount()).isEqualTo(model.gaps);
    Set<List<Integer>> distinct = new HashSet<>();
    long entries = 0;
    for (Map<List<Integer>, EnumSet<StorageTier>> m : model.blocks.values()) {
      distinct.addAll(m.keySet());
      entries += m.size();
    }
    assertThat(index.entryCount()).as("entries").isEqualTo(entries);
    assertThat(index.blockCount()).as("blocks (nodes nobody holds are pruned)").isEqualTo(distinct.size());

    ViewFixture fixture = new ViewFixture(index, ViewFixture.workers("a", 2, "b", 1));
    Candidates scratch = new Candidates();
    for (List<Integer> query : queries) {
      long[] hashes = hashes(query);
      Map<Rank, TieredOverlap> viaSelection = fixture.overlaps(hashes, scratch);
      for (int r = 0; r < RANKS.size(); r++) {
        TieredOverlap expected = model.overlap(r, query);
        assertThat(index.overlap(RANKS.get(r), hashes)).as("rank %s query %s", RANKS.get(r), query)
            .isEqualTo(expected);
        assertThat(viaSelection.get(RANKS.get(r))).as("selection path, rank %s query %s", RANKS.get(r), query)
            .isEqualTo(expected);
      }
    }
  }
}
