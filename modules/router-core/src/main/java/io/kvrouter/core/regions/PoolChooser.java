package io.kvrouter.core.regions;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Picks the region a global call goes to: among the pools of a model, the fresh ones first, by load normalised by
 * capacity, ties by region name (stable: the same summaries always give the same answer); stale pools after every
 * fresh one, in the same order; pools without workers never. A region with no summary at all is not a candidate:
 * nothing says it has workers or where its routers are.
 */
public final class PoolChooser {
  private PoolChooser() {}

  /** The pool to use, or null when no pool has workers. Allocation-free: it runs on every global Select. */
  public static PoolSummary choose(Collection<PoolSummary> pools, long nowMillis, long staleAfterMillis) {
    PoolSummary best = null;
    boolean bestStale = true;
    for (PoolSummary pool : pools) {
      if (pool.workers() <= 0) {
        continue;
      }
      boolean stale = pool.isStale(nowMillis, staleAfterMillis);
      if (best == null || (bestStale && !stale) || (stale == bestStale && ranksBefore(pool, best))) {
        best = pool;
        bestStale = stale;
      }
    }
    return best;
  }

  /**
   * Every pool with workers in the order {@link #choose} prefers them (its answer first): the order a global Book
   * falls back in when the chosen region does not answer.
   */
  public static List<PoolSummary> ranked(Collection<PoolSummary> pools, long nowMillis, long staleAfterMillis) {
    List<PoolSummary> ranked = new ArrayList<>();
    for (PoolSummary pool : pools) {
      if (pool.workers() > 0) {
        ranked.add(pool);
      }
    }
    ranked.sort((a, b) -> {
      boolean aStale = a.isStale(nowMillis, staleAfterMillis);
      boolean bStale = b.isStale(nowMillis, staleAfterMillis);
      if (aStale != bStale) {
        return aStale ? 1 : -1;
      }
      return ranksBefore(a, b) ? -1 : ranksBefore(b, a) ? 1 : 0;
    });
    return ranked;
  }

  private static boolean ranksBefore(PoolSummary a, PoolSummary b) {
    int byLoad = Double.compare(a.load(), b.load());
    return byLoad < 0 || (byLoad == 0 && a.region().compareTo(b.region()) < 0);
  }
}
