package io.kvrouter.server.transport;

import com.typesafe.config.Config;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.BearerToken;
import io.kvrouter.api.v1.Admin;
import io.kvrouter.api.v1.Router;
import io.kvrouter.api.v1.Workers;
import io.kvrouter.core.auth.AccessTokens;
import io.kvrouter.core.auth.AccessTokens.Role;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.server.grpc.StatusMapping;
import io.kvrouter.server.metrics.RouterMetrics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.grpc.javadsl.GrpcExceptionHandler;
import org.apache.pekko.grpc.javadsl.GrpcMarshalling;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.japi.function.Function;
import org.apache.pekko.stream.Materializer;

/**
 * {@code kvrouter.auth}: which services require which role, and the tokens granting them; both bindings check a
 * call through {@link #check} before its service sees it. Workers requires the workers role, Admin the admin role,
 * Router the router role when {@code router-requires-token} is on; health and reflection stay open (probes, tools).
 */
public final class TokenAuth {
  private final AccessTokens tokens;
  /** Service name (e.g. kvrouter.v1.Workers) to the role it requires; services not listed are open. */
  private final Map<String, Role> required;

  private TokenAuth(AccessTokens tokens, Map<String, Role> required) {
    this.tokens = tokens;
    this.required = Map.copyOf(required);
  }

  /** Null when {@code kvrouter.auth.enabled} is off: no call needs a token. */
  public static TokenAuth fromConfig(Config root) {
    Config auth = root.getConfig("kvrouter.auth");
    if (!auth.getBoolean("enabled")) {
      return null;
    }
    List<AccessTokens.Grant> grants = new ArrayList<>();
    for (Config token : auth.getConfigList("tokens")) {
      grants.add(AccessTokens.grant(token.getString("token"), roles(token.getStringList("roles"))));
    }
    String file = auth.getString("tokens-file");
    if (!file.isBlank()) {
      grants.addAll(readTokensFile(Path.of(file)));
    }
    if (grants.isEmpty()) {
      throw new IllegalArgumentException("kvrouter.auth.enabled is on but no token is configured "
          + "(kvrouter.auth.tokens, kvrouter.auth.tokens-file)");
    }
    Map<String, Role> required = auth.getBoolean("router-requires-token")
        ? Map.of(Router.name, Role.ROUTER, Workers.name, Role.WORKERS, Admin.name, Role.ADMIN)
        : Map.of(Workers.name, Role.WORKERS, Admin.name, Role.ADMIN);
    return new TokenAuth(AccessTokens.of(grants), required);
  }

  /** Lines {@code <token> <role>[,<role>...]}; blank lines and lines starting with '#' are skipped. */
  static List<AccessTokens.Grant> readTokensFile(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read kvrouter.auth.tokens-file " + file, e);
    }
    List<AccessTokens.Grant> grants = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] fields = line.split("\\s+");
      if (fields.length != 2) {
        throw new IllegalArgumentException(file + " line " + (i + 1) + ": expected '<token> <role>[,<role>...]'");
      }
      grants.add(AccessTokens.grant(fields[0], roles(List.of(fields[1].split(",")))));
    }
    return grants;
  }

  private static Set<Role> roles(List<String> names) {
    Set<Role> roles = EnumSet.noneOf(Role.class);
    names.forEach(name -> roles.add(Role.fromConfig(name)));
    return roles;
  }

  /** Whether calls to {@code serviceName} need a token. */
  boolean guards(String serviceName) {
    return required.containsKey(serviceName);
  }

  /** Null when a call to {@code serviceName} with this {@code authorization} header may proceed; else why not. */
  RoutingError check(String serviceName, String authorization) {
    Role role = required.get(serviceName);
    if (role == null) {
      return null;
    }
    RoutingError denied = tokens.check(BearerToken.of(authorization), role);
    return denied == null ? null : StatusMapping.accessDenied(denied);
  }

  /** The NETTY binding's check, for each guarded service's definition. */
  ServerInterceptor interceptor(ActorSystem system, RouterMetrics metrics) {
    return new ServerInterceptor() {
      @Override
      public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
          ServerCallHandler<Q, A> next) {
        RoutingError denied = check(call.getMethodDescriptor().getServiceName(), headers.get(BearerToken.KEY));
        if (denied == null) {
          return next.startCall(call, headers);
        }
        metrics.rejected(call.getMethodDescriptor().getBareMethodName(), new RoutingException(denied));
        StatusRuntimeException status = StatusMapping.toStatusException(new RoutingException(denied), system);
        call.close(status.getStatus(), status.getTrailers());
        return new ServerCall.Listener<>() {};
      }
    };
  }

  /**
   * The PEKKO binding's check around the generated handlers: a refused call is answered here, through
   * {@link StatusMapping} as the generated handlers answer, after its body was read (answering while the client is
   * still sending would reset the stream); the service never sees it.
   */
  Function<HttpRequest, CompletionStage<HttpResponse>> around(ActorSystem system, RouterMetrics metrics,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    Materializer materializer = Materializer.matFromSystem(system);
    return request -> {
      RoutingError denied = check(serviceOf(request.getUri().path()),
          request.getHeader(BearerToken.HEADER).map(HttpHeader::value).orElse(null));
      if (denied == null) {
        return handler.apply(request);
      }
      Optional<CompletionStage<HttpResponse>> refused = GrpcMarshalling.negotiated(request, (reader, writer) ->
          request.discardEntityBytes(materializer).completionStage().thenApply(done ->
              GrpcExceptionHandler.standard(new RoutingException(denied), StatusMapping.handler(), writer, system)));
      if (refused.isEmpty()) {
        return handler.apply(request); // not a gRPC request: the generated handlers answer it as without auth
      }
      metrics.rejected(methodOf(request.getUri().path()), new RoutingException(denied));
      return refused.get();
    };
  }

  /** {@code /kvrouter.v1.Workers/Register} to {@code Register}. */
  private static String methodOf(String path) {
    String method = MethodDescriptor.extractBareMethodName(path.startsWith("/") ? path.substring(1) : path);
    return method == null ? "" : method;
  }

  /** {@code /kvrouter.v1.Workers/Register} to {@code kvrouter.v1.Workers}. */
  private static String serviceOf(String path) {
    String method = path.startsWith("/") ? path.substring(1) : path;
    String service = MethodDescriptor.extractFullServiceName(method);
    return service == null ? "" : service;
  }
}
