//! `cdnlab compose`: a compose file generated from topology files, so the topology is the one
//! source of truth for labs and containers alike. One service per node runs `cdnlab container
//! run` with the node's networks (one compose network per link or LAN, with the segment's
//! impairments), its routes and its role; clients run once and write results to a bind mount.
//! What compose cannot express is said in the file: timeline events become commented commands,
//! a `ready` command is refused. `--swarm` writes a Docker Swarm stack of one topology instead
//! (`swarm`): overlays whose addresses the containers learn from each other's cards, secrets,
//! placement, and a timeline's `start` refused.

pub mod plan;
mod service;
pub mod swarm;
mod timeline;
pub mod yaml;

use crate::topology::{
    self, LoadOptions, Program, Ready, TimelineAction, Topology, DEFERRED_CLOSE, DEFERRED_OPEN,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use yaml::{Map, Yaml};

/// One topology of the file.
#[derive(Debug)]
pub struct Input {
    /// The compose profile its services belong to; `None`: they start by default.
    pub profile: Option<String>,
    /// The file as the user named it (for the comments).
    pub source: String,
    /// The topology read with the variables that only programs use left deferred
    /// (`topology::parse_deferring_program_vars`).
    pub topology: Topology,
    /// Those variables: each becomes an environment variable with the file's value as default.
    pub deferred: BTreeSet<String>,
}

/// The topologies of the checked-in `docker-compose.yml`, with their profiles: what
/// `cdnlab compose` is run on to write it (a test checks that it was).
pub const SHIPPED: [(Option<&str>, &str); 5] = [
    (None, "topologies/interconnected-cdn.toml"),
    (Some("fog"), "topologies/f-fdn.toml"),
    (Some("icn"), "topologies/icn-telco-cdn.toml"),
    (Some("replication"), "topologies/adaptive-replication.toml"),
    (Some("p2p"), "topologies/hybrid-p2p-cloud.toml"),
];

/// Reads one topology file for a compose file: checks it as `cdnlab up` would (every role's
/// config included) with the `--set`s whose variable the file has, then reads it again with
/// the program-only variables deferred. Errors name the file.
pub fn load(profile: Option<&str>, path: &Path, set: &[(String, String)]) -> Result<Input, String> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{source}: {e}"))?;
    let declared = topology::parse(&text, &source, &LoadOptions::default())
        .map_err(|e| e.to_string())?
        .vars;
    let set: Vec<(String, String)> = set
        .iter()
        .filter(|(name, _)| declared.contains_key(name))
        .cloned()
        .collect();
    let options = LoadOptions {
        name: None,
        set: &set,
    };
    let checked = topology::parse(&text, &source, &options).map_err(|e| e.to_string())?;
    if let Some(problem) = crate::role_configs::check_topology(&checked).first() {
        return Err(format!("{source}: {problem}"));
    }
    let (topology, deferred) = topology::parse_deferring_program_vars(&text, &source, &options)
        .map_err(|e| e.to_string())?;
    Ok(Input {
        profile: profile.map(str::to_string),
        source,
        topology,
        deferred,
    })
}

/// A profile names services, networks and volumes: letters, digits and `-`, starting with a
/// letter.
fn check_profile(profile: &str) -> Result<(), String> {
    let mut chars = profile.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{profile}` is not a profile name (lower-case letters, digits and `-`, starting with a letter)"
        ))
    }
}

/// The image every service runs.
const IMAGE: &str = "${CDNLAB_IMAGE:-cdnlab:latest}";
/// Where results go on the host.
const RESULTS: &str = "${CDNLAB_RESULTS:-./results/compose}";

/// What `cdnlab compose` writes: a compose file, or a Swarm stack file (`--swarm`).
#[derive(Debug, Clone)]
pub enum Target {
    Compose,
    Swarm(swarm::SwarmOptions),
}

/// What `cdnlab compose` writes.
#[derive(Debug)]
pub struct Generated {
    pub compose: String,
    /// The script that runs the topologies' timelines (`None`: none has one).
    pub timeline_script: Option<String>,
}

/// The compose file for `inputs`, in order, and the script of their timelines; for a Swarm
/// `target`, the stack file of one topology (its certificates issued). Errors name the
/// topology file and what in it has no compose or stack form.
pub fn generate(inputs: &[Input], target: &Target) -> Result<Generated, String> {
    let swarm = match target {
        Target::Compose => None,
        Target::Swarm(options) => Some(options),
    };
    if swarm.is_some() && (inputs.len() != 1 || inputs[0].profile.is_some()) {
        return Err(
            "--swarm: a stack holds one topology without a profile (deploy each topology as \
             a stack of its own)"
                .into(),
        );
    }
    let mut profiles = BTreeSet::new();
    for input in inputs {
        if let Some(profile) = &input.profile {
            check_profile(profile)?;
        }
        if !profiles.insert(input.profile.clone()) {
            return Err(match &input.profile {
                Some(p) => format!("the profile `{p}` is given twice"),
                None => "only one topology can be without a profile".into(),
            });
        }
    }
    let mut allocator = plan::Allocator::default();
    let header = yaml::commented(&header(inputs, swarm.is_some()));
    let mut doc: Map = vec![(header.clone(), Yaml::Plain(String::new()))];
    let (mut services, mut networks, mut volumes) = (Map::new(), Map::new(), Map::new());
    let mut secrets = Map::new();
    let (mut arms, mut timed_labs) = (Vec::new(), Vec::new());
    for input in inputs {
        let fail = |e: String| format!("{}: {e}", input.source);
        check(&input.topology, swarm.is_some()).map_err(fail)?;
        let hosts = swarm.map_or(0, |o| o.hosts.unwrap_or(1).max(1));
        let topology = plan::readdress(&input.topology, &mut allocator, hosts).map_err(fail)?;
        let plan = match swarm {
            None => None,
            Some(options) => {
                // Certificates last: an error here must not leave keys behind.
                let directory = allocator.take(topology.nodes.len() + hosts).map_err(fail)?;
                swarm::issue_certs(&options.certs, &topology).map_err(fail)?;
                Some(swarm::Plan {
                    directory,
                    placement: swarm::placement(&topology, options.hosts),
                    certs: options.certs.clone(),
                })
            }
        };
        let plan = plan.as_ref();
        if let Some(plan) = plan {
            secrets.extend(swarm::secrets(&topology, plan));
        }
        let names = service::Names::new(input.profile.as_deref());
        let env = EnvVars {
            vars: &topology.vars,
            deferred: &input.deferred,
        };
        if let Some(arm) = timeline::script_arm(&topology, &names) {
            arms.push(arm);
            timed_labs.push(topology.name.clone());
        }
        services.push((
            section(input, &topology, &names, swarm.is_some()),
            Yaml::Plain(String::new()),
        ));
        services.extend(service::services(&topology, &names, &env, plan));
        networks.extend(service::networks(&topology, &names, plan));
        volumes.extend(service::volumes(&topology, &names, plan));
    }
    doc.push(("services".into(), Yaml::Map(services)));
    doc.push(("networks".into(), Yaml::Map(networks)));
    if swarm.is_some() {
        doc.push(("secrets".into(), Yaml::Map(secrets)));
    } else {
        doc.push(("volumes".into(), Yaml::Map(volumes)));
    }
    Ok(Generated {
        timeline_script: timeline::script(&header, &arms, &timed_labs, swarm.is_some()),
        compose: yaml::write(&doc),
    })
}

/// What has no compose form, and (`swarm`) what has no stack form.
fn check(topology: &Topology, swarm: bool) -> Result<(), String> {
    for node in &topology.nodes {
        if let Some(Ready::Command(_)) = node.ready {
            return Err(format!(
                "node {}: `ready = {{ command = ... }}` has no compose form (a container is \
                 ready when its TCP port accepts: use `ready = {{ tcp = PORT }}`)",
                node.name
            ));
        }
    }
    if swarm {
        for event in &topology.timeline {
            if let TimelineAction::StartNode { node } = event.action {
                return Err(format!(
                    "the timeline's `start = \"{}\"` at {} has no Swarm form: a task started \
                     again gets new addresses, which the other nodes' routes do not follow",
                    topology.nodes[node].name,
                    netem::units::format_duration_ns(event.at_ns)
                ));
            }
        }
    }
    Ok(())
}

fn header(inputs: &[Input], swarm: bool) -> String {
    if swarm {
        let lab = &inputs[0].topology.name;
        return format!(
            "# Generated by `cdnlab compose --swarm` from {}: a Docker Swarm stack. Edit the \
             topology file and generate it again, not this file.\n\
             #\n\
             # scripts/build-image.sh builds the image (CDNLAB_IMAGE, default cdnlab:latest) on \
             every host; then\n\
             #   mkdir -p \"${{CDNLAB_RESULTS:-./results/compose}}/{lab}\"   # on every host: \
             Swarm binds only existing directories\n\
             #   docker stack deploy -c THIS_FILE {lab}\n\
             # Swarm picks the addresses: each container learns its peers' on the `{}` \
             network\n\
             # (its card, served on the control plane) and starts its program once the nodes \
             it needs are ready.\n\
             # scripts/set-delay.sh --swarm {lab} NETWORK changes a link; `docker stack rm {lab}` \
             removes it all.",
            inputs[0].source,
            swarm::DIRECTORY
        );
    }
    let sources: Vec<String> = inputs
        .iter()
        .map(|i| match &i.profile {
            Some(p) => format!("{} (profile {p})", i.source),
            None => i.source.clone(),
        })
        .collect();
    format!(
        "# Generated by `cdnlab compose` from {}: edit the topology files and generate it \
         again, not this file.\n\
         #\n\
         # scripts/build-image.sh builds the image (CDNLAB_IMAGE, default cdnlab:latest); \
         results go to\n\
         # CDNLAB_RESULTS (default ./results/compose)/LAB/NODE. Every network's \
         impairments are applied by\n\
         # each container on it (`cdnlab container run`); scripts/set-delay.sh --compose \
         NETWORK changes one.",
        sources.join(", ")
    )
}

/// The comment that opens a topology's services: how to run it, its variables, its timeline.
fn section(input: &Input, topology: &Topology, names: &service::Names, swarm: bool) -> String {
    let clients: Vec<String> = topology
        .nodes
        .iter()
        .filter(|n| n.client)
        .map(|n| names.service(&n.name))
        .collect();
    // `up` with a profile also starts the services that have none: naming the clients
    // starts only them and what they depend on.
    let up = match &input.profile {
        _ if swarm => format!("docker stack deploy -c THIS_FILE {}", topology.name),
        Some(p) => format!("docker compose --profile {p} up -d {}", clients.join(" ")),
        None => "docker compose up -d".into(),
    };
    let mut text = format!(
        "# --- {} (lab {}): {up}\n# The clients ({}) exit when done; results in \
         CDNLAB_RESULTS/{}/.",
        input.source,
        topology.name,
        clients.join(", "),
        topology.name
    );
    if !input.deferred.is_empty() {
        let vars: Vec<String> = input
            .deferred
            .iter()
            .map(|v| format!("{}={}", env_name(v), topology.vars[v]))
            .collect();
        text += &format!("\n# Variables (environment or .env): {}", vars.join(", "));
    }
    let fixed: Vec<&String> = topology
        .vars
        .keys()
        .filter(|v| !input.deferred.contains(*v))
        .collect();
    if !fixed.is_empty() {
        let fixed: Vec<&str> = fixed.iter().map(|v| v.as_str()).collect();
        text += &format!(
            "\n# Fixed when generated (they shape links, variants or the timeline; \
             `cdnlab compose --set` changes them): {}",
            fixed.join(", ")
        );
    }
    for line in timeline::commands(topology, names, swarm) {
        text += &format!("\n# {line}");
    }
    text
}

/// A variable's environment name: its name in capitals.
fn env_name(var: &str) -> String {
    var.to_ascii_uppercase()
}

/// Turns the deferred variables' marked references into compose's `${NAME:-default}` and
/// writes every other `$` as compose's literal `$$`.
pub(crate) struct EnvVars<'a> {
    vars: &'a BTreeMap<String, String>,
    deferred: &'a BTreeSet<String>,
}

impl EnvVars<'_> {
    pub(crate) fn text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find(DEFERRED_OPEN) {
            out.push_str(&rest[..open].replace('$', "$$"));
            let after = &rest[open + DEFERRED_OPEN.len_utf8()..];
            let close = after.find(DEFERRED_CLOSE).unwrap_or(after.len());
            let name = &after[..close];
            let value = self.vars.get(name).map(String::as_str).unwrap_or_default();
            // Compose cannot hold `$`, `}` or a line break in a default: such a value is
            // written as it is.
            if self.deferred.contains(name) && !value.contains(['$', '}', '\n']) {
                out.push_str(&format!("${{{}:-{value}}}", env_name(name)));
            } else {
                out.push_str(&value.replace('$', "$$"));
            }
            rest = after.get(close + DEFERRED_CLOSE.len_utf8()..).unwrap_or("");
        }
        out.push_str(&rest.replace('$', "$$"));
        out
    }
}

/// True if the node runs a program (a role or a command), not a plain router.
fn runs_program(program: &Program) -> bool {
    !matches!(program, Program::None)
}

#[cfg(test)]
mod tests;
