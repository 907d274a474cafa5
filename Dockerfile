# The kvrouter node image: router-server's Main over the runtime classpath the build writes for bin/kvrouter
# (modules/router-server/target/classpath.txt), every jar in /opt/kvrouter/lib. Build from the repository root:
#   docker build -t kvrouter:0.1.0 .
# deploy/README.md says how to run it; deploy/kubernetes uses it.

# --- build: the reactor packages router-server and the modules it depends on (nothing is installed)
FROM maven:3.8.7-eclipse-temurin-17 AS build
WORKDIR /src
COPY .mvn/ .mvn/
COPY pom.xml ./
COPY proto/ proto/
COPY modules/ modules/
RUN mvn -B -q -pl modules/router-server -am -DskipTests package \
 && mkdir -p /opt/kvrouter/lib \
 && cp modules/router-server/target/router-server-*.jar /opt/kvrouter/lib/ \
 && tr ':' '\n' < modules/router-server/target/classpath.txt | xargs cp -t /opt/kvrouter/lib/

# --- run
FROM eclipse-temurin:17-jre
RUN useradd --system --uid 10001 --no-create-home kvrouter
COPY --from=build /opt/kvrouter/lib/ /opt/kvrouter/lib/
USER 10001
# Listen on every interface of the container; the addresses other nodes reach this one at (KVROUTER_MANAGEMENT_HOST,
# KVROUTER_REMOTE_HOST) stay loopback unless set: a lone container forms a one-node cluster of its own.
ENV KVROUTER_GRPC_HOST=0.0.0.0 \
    KVROUTER_HTTP_HOST=0.0.0.0 \
    KVROUTER_EPP_HOST=0.0.0.0 \
    KVROUTER_MANAGEMENT_BIND_HOST=0.0.0.0 \
    KVROUTER_REMOTE_BIND_HOST=0.0.0.0
# gRPC, management (/ready, /alive, /metrics, cluster bootstrap), remoting (Artery), the OpenAI-compatible HTTP
# front, the endpoint picker (Envoy ext_proc) and its gRPC health: the router's default ports
EXPOSE 50051 8558 25520 8080 9002 9003
# The JVM is PID 1, so SIGTERM reaches it: the node leaves the cluster and exits. Extra JVM flags: JAVA_TOOL_OPTIONS.
ENTRYPOINT ["java", "-Djava.util.concurrent.ForkJoinPool.common.parallelism=4", "-XX:MaxRAMPercentage=75", \
  "-cp", "/opt/kvrouter/lib/*", "io.kvrouter.server.Main"]
