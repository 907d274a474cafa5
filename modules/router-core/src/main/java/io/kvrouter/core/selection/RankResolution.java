package io.kvrouter.core.selection;

import io.kvrouter.core.model.Rank;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * A structure's per-rank entries laid out by a view's rank indexes, cached per view and per the structure's epoch
 * (which its writer bumps whenever a rank's entry is created or dropped): views change only on registrations, so a
 * selection resolves its ranks once per view instead of once per call. A resolution racing a write may hold an entry
 * just dropped or miss one just created; the changed epoch makes the next call resolve again.
 */
public final class RankResolution<T> {
  private final Function<Rank, T> lookup;
  private final IntFunction<T[]> newArray;
  private volatile Resolved<T> resolved;

  private record Resolved<T>(SelectionView view, long epoch, T[] byRankIndex) {}

  public RankResolution(Function<Rank, T> lookup, IntFunction<T[]> newArray) {
    this.lookup = lookup;
    this.newArray = newArray;
  }

  /** The entries of the view's ranks by rank index (null: the rank has none) as of {@code epoch}. */
  public T[] resolve(SelectionView view, long epoch) {
    Resolved<T> cached = resolved;
    if (cached != null && cached.view == view && cached.epoch == epoch) {
      return cached.byRankIndex;
    }
    T[] byRankIndex = newArray.apply(view.rankCount());
    for (int i = 0; i < byRankIndex.length; i++) {
      byRankIndex[i] = lookup.apply(view.rank(i));
    }
    resolved = new Resolved<>(view, epoch, byRankIndex);
    return byRankIndex;
  }
}
