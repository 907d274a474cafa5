package io.kvrouter.core.selection;

import io.kvrouter.core.load.ReportedLoad;

/**
 * Narrows a selection's candidates to the workers that can serve a request's LoRA adapter, as Dynamo's LoRA filter
 * does: the ranks that have it loaded (declared at registration, or named in the rank's last load report: an engine
 * connector reads vLLM's {@code vllm:lora_requests_info}) when some candidate does; else (a cold adapter) the one candidate worker with
 * the highest rendezvous weight for the adapter's name, so the first requests of a cold adapter all go to one worker
 * (every node computes the same weight, with no coordination) and it is loaded once. A pinned request is not
 * narrowed (the pin wins), and narrowing never empties the candidates: it only chooses among those projected.
 */
public final class LoraPlacement {
  private LoraPlacement() {}

  /** Narrows {@code c} (projected for {@code request} on {@code view}) for the request's adapter, if it names one. */
  public static void narrow(SelectionView view, SelectionRequest request, Candidates c) {
    String adapter = request.loraName();
    if (adapter.isEmpty() || request.pinnedWorker() != null || c.size() == 0) {
      return;
    }
    boolean anyLoaded = false;
    for (int i = 0; i < c.size() && !anyLoaded; i++) {
      anyLoaded = isLoaded(view, c.rankIndex(i), adapter);
    }
    if (anyLoaded) {
      c.retain(rank -> isLoaded(view, rank, adapter), FilterReason.LORA_NOT_LOADED);
      return;
    }
    String placed = coldWorker(view, adapter, c);
    c.retain(rank -> view.rankWorker(rank).workerId().equals(placed), FilterReason.LORA_COLD_PLACEMENT);
  }

  /**
   * Whether the view's rank {@code rankIndex} has {@code adapter} loaded: its worker declared it at registration,
   * or the rank's last load report names it.
   */
  public static boolean isLoaded(SelectionView view, int rankIndex, String adapter) {
    if (view.rankWorker(rankIndex).hasLoraAdapter(adapter)) {
      return true;
    }
    ReportedLoad reported = view.cell(rankIndex).reported();
    return reported != null && reported.loraAdapters().contains(adapter);
  }

  /** The candidate worker a cold {@code adapter} is placed on: the highest rendezvous weight, ties by worker id. */
  static String coldWorker(SelectionView view, String adapter, Candidates c) {
    String best = null;
    long bestWeight = 0;
    for (int i = 0; i < c.size(); i++) {
      String worker = view.rankWorker(c.rankIndex(i)).workerId();
      if (worker.equals(best)) {
        continue;
      }
      long weight = rendezvousWeight(adapter, worker);
      if (best == null || Long.compareUnsigned(weight, bestWeight) > 0
          || (weight == bestWeight && worker.compareTo(best) < 0)) {
        best = worker;
        bestWeight = weight;
      }
    }
    return best;
  }

  /**
   * The rendezvous (highest-random-weight) weight of {@code worker} for {@code adapter}: FNV-1a over both names' UTF-16
   * code units, a separator between them, then SplitMix64's finalizer to spread the bits. Stable across nodes and
   * releases (unlike {@link String#hashCode}, its bits are mixed well enough for a fair spread).
   */
  public static long rendezvousWeight(String adapter, String worker) {
    long h = 0xcbf29ce484222325L;
    h = fnv(h, adapter);
    h = (h ^ 0xFFFF) * 0x100000001b3L;
    h = fnv(h, worker);
    h ^= h >>> 30;
    h *= 0xbf58476d1ce4e5b9L;
    h ^= h >>> 27;
    h *= 0x94d049bb133111ebL;
    h ^= h >>> 31;
    return h;
  }

  private static long fnv(long h, String s) {
    for (int i = 0; i < s.length(); i++) {
      h = (h ^ s.charAt(i)) * 0x100000001b3L;
    }
    return h;
  }
}
