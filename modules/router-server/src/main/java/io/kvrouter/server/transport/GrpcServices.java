package io.kvrouter.server.transport;

import com.google.protobuf.Descriptors;
import io.kvrouter.api.health.v1.Health;
import io.kvrouter.api.v1.Admin;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.Deregistered;
import io.kvrouter.api.v1.KvEventAck;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.LoadAck;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.PolicySet;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Router;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.Workers;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.server.grpc.AdminService;
import io.kvrouter.server.grpc.HealthService;
import io.kvrouter.server.grpc.ProtoMapping;
import io.kvrouter.server.grpc.RouterService;
import io.kvrouter.server.grpc.WorkersService;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.apache.pekko.grpc.ServiceDescription;

/**
 * The one implementation of the contract that every binding serves: the four service objects, and the table of
 * kvrouter's unary methods that the NETTY and PEKKO_FAST bindings dispatch on (the stock binding reaches the same
 * objects through Pekko gRPC's generated power-API handlers).
 */
public record GrpcServices(RouterService router, WorkersService workers, AdminService admin, HealthService health,
    List<UnaryMethod<?, ?>> unaryMethods) {

  /** Router, Workers and Admin: kvrouter's own services, all unary. */
  public static final List<ServiceDescription> KVROUTER = List.of(Router.description, Workers.description,
      Admin.description);
  /** Everything reflection lists. */
  public static final List<ServiceDescription> ALL = List.of(Router.description, Workers.description,
      Admin.description, Health.description);

  public GrpcServices {
    unaryMethods = List.copyOf(unaryMethods);
    verify(unaryMethods);
  }

  public static GrpcServices create(RouterCluster cluster, RequestLimits limits, BooleanSupplier serving) {
    return create(new RouterService(cluster, new ProtoMapping(limits)), new WorkersService(cluster),
        new AdminService(cluster), new HealthService(Set.of(Router.name, Workers.name, Admin.name), serving));
  }

  public static GrpcServices create(RouterService router, WorkersService workers, AdminService admin,
      HealthService health) {
    return new GrpcServices(router, workers, admin, health, List.of(
        new UnaryMethod<>(Router.name, "Select", RouteRequest.getDefaultInstance(), Selection.getDefaultInstance(),
            false, (in, remaining) -> router.select(in)),
        new UnaryMethod<>(Router.name, "Book", RouteRequest.getDefaultInstance(), Booking.getDefaultInstance(),
            true, router::book),
        new UnaryMethod<>(Router.name, "Release", BookingRef.getDefaultInstance(), Released.getDefaultInstance(),
            true, router::release),
        new UnaryMethod<>(Router.name, "MarkPrefillDone", BookingRef.getDefaultInstance(),
            PrefillMarked.getDefaultInstance(), true, router::markPrefillDone),
        new UnaryMethod<>(Router.name, "Renew", BookingRef.getDefaultInstance(), Renewed.getDefaultInstance(),
            true, router::renew),
        new UnaryMethod<>(Workers.name, "Register", WorkerRegistration.getDefaultInstance(),
            Registered.getDefaultInstance(), true, workers::register),
        new UnaryMethod<>(Workers.name, "Deregister", WorkerKey.getDefaultInstance(),
            Deregistered.getDefaultInstance(), true, workers::deregister),
        new UnaryMethod<>(Workers.name, "ReportLoad", LoadReport.getDefaultInstance(), LoadAck.getDefaultInstance(),
            true, workers::reportLoad),
        new UnaryMethod<>(Workers.name, "PublishKvEvents", KvEventBatch.getDefaultInstance(),
            KvEventAck.getDefaultInstance(), false, (in, remaining) -> workers.publishKvEvents(in)),
        new UnaryMethod<>(Admin.name, "SetPolicy", SetPolicyRequest.getDefaultInstance(),
            PolicySet.getDefaultInstance(), true, admin::setPolicy),
        new UnaryMethod<>(Admin.name, "GetModelState", ModelStateRequest.getDefaultInstance(),
            ModelState.getDefaultInstance(), true, admin::getModelState),
        new UnaryMethod<>(Admin.name, "ListModels", ListModelsRequest.getDefaultInstance(),
            ModelList.getDefaultInstance(), false, (in, remaining) -> admin.listModels(in))));
  }

  /** The protobuf descriptor of a service, from its generated description. */
  public static Descriptors.ServiceDescriptor descriptor(ServiceDescription description) {
    String name = description.name();
    Descriptors.ServiceDescriptor service =
        description.descriptor().findServiceByName(name.substring(name.lastIndexOf('.') + 1));
    if (service == null || !service.getFullName().equals(name)) {
      throw new IllegalStateException("no service " + name + " in " + description.descriptor().getName());
    }
    return service;
  }

  /** The table must match the .proto exactly: every rpc of Router, Workers and Admin, unary, with its types. */
  private static void verify(List<UnaryMethod<?, ?>> methods) {
    Map<String, UnaryMethod<?, ?>> byName = new HashMap<>();
    for (UnaryMethod<?, ?> method : methods) {
      if (byName.put(method.fullName(), method) != null) {
        throw new IllegalStateException("method listed twice: " + method.fullName());
      }
    }
    int described = 0;
    for (ServiceDescription description : KVROUTER) {
      for (Descriptors.MethodDescriptor rpc : descriptor(description).getMethods()) {
        described++;
        UnaryMethod<?, ?> method = byName.get(description.name() + "/" + rpc.getName());
        if (method == null) {
          throw new IllegalStateException("no binding for " + rpc.getFullName());
        }
        if (rpc.isClientStreaming() || rpc.isServerStreaming()
            || !rpc.getInputType().getFullName().equals(method.requestPrototype().getDescriptorForType().getFullName())
            || !rpc.getOutputType().getFullName()
                .equals(method.responsePrototype().getDescriptorForType().getFullName())) {
          throw new IllegalStateException("binding of " + rpc.getFullName() + " does not match the .proto");
        }
      }
    }
    if (described != methods.size()) {
      throw new IllegalStateException("the unary table lists methods the .proto does not have");
    }
  }
}
