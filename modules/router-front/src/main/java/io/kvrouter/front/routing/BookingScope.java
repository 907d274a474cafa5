package io.kvrouter.front.routing;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.regions.PoolSummary;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionView;

/**
 * Where a request books, decided before it is tokenized (the pool's block size shapes its hashes): this node's region
 * (the default), or with global scope the pool the node's summaries rank first, which may be another region's, as
 * router-server's RouterService decides a global Book.
 *
 * @param remote the chosen pool when it is another region's, else null
 */
public record BookingScope(String model, String region, int blockSize, PoolSummary remote) {

  /**
   * The scope of a request for {@code model}; a model with no workers here (regional) or anywhere (global) is
   * rejected as the gRPC Book rejects it: NOT_FOUND UNKNOWN_MODEL, or FAILED_PRECONDITION MODEL_NOT_IN_REGION.
   */
  public static BookingScope resolve(RouterCluster cluster, String model, boolean global) {
    RequestLimits.requireModel(model);
    PoolSummary remote = global ? cluster.regions().remotePool(model) : null;
    if (remote != null) {
      return new BookingScope(model, remote.region(), remote.blockSize(), remote);
    }
    SelectionView view = cluster.view(model);
    if (view == null || view.isEmpty()) {
      throw cluster.regions().missingHere(model).toException();
    }
    return new BookingScope(model, cluster.region(), view.blockSize(), null);
  }

  /** The booking facade in the scope's region (looked up per call: a facade lives as long as its model's actor). */
  public ModelClient client(RouterCluster cluster) {
    return cluster.client(model, region);
  }

  /** The region a booking answered in this scope lives in ({@code BookingRef.region}). */
  public String bookingRegion(String answered) {
    return answered == null || answered.isEmpty() ? region : answered;
  }
}
