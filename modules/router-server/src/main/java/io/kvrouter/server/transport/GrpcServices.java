package io.kvrouter.server.transport;

import io.kvrouter.api.v1.Admin;
import io.kvrouter.api.v1.Router;
import io.kvrouter.api.v1.Workers;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.server.grpc.AdminService;
import io.kvrouter.server.grpc.HealthService;
import io.kvrouter.server.grpc.ModelStates;
import io.kvrouter.server.grpc.ProtoMapping;
import io.kvrouter.server.grpc.RouterService;
import io.kvrouter.server.grpc.WorkersService;
import io.kvrouter.server.metrics.RouterMetrics;
import java.util.Set;
import java.util.function.BooleanSupplier;

/** The one implementation of the contract, four service objects that either binding serves. */
public record GrpcServices(RouterService router, WorkersService workers, AdminService admin, HealthService health,
    RouterMetrics metrics) {

  public static GrpcServices create(RouterCluster cluster, RequestLimits limits, BooleanSupplier serving,
      RouterMetrics metrics) {
    return create(cluster, limits, serving, metrics, ModelStates.Breakers.NONE);
  }

  /** As above, GetModelState showing {@code breakers} (the node's front's). */
  public static GrpcServices create(RouterCluster cluster, RequestLimits limits, BooleanSupplier serving,
      RouterMetrics metrics, ModelStates.Breakers breakers) {
    ProtoMapping mapping = new ProtoMapping(limits);
    return new GrpcServices(new RouterService(cluster, mapping, metrics), new WorkersService(cluster, mapping, metrics),
        new AdminService(cluster, mapping, metrics, breakers),
        new HealthService(Set.of(Router.name, Workers.name, Admin.name), serving), metrics);
  }
}
