//! The runs of a sweep: the cartesian product of the varied variables, in a stable order.

/// `KEY=V1,V2,…` from `--vary`.
pub fn parse_vary(arg: &str) -> Result<(String, Vec<String>), String> {
    let (key, values) = arg
        .split_once('=')
        .ok_or_else(|| format!("--vary `{arg}`: expected KEY=V1,V2,…"))?;
    let values: Vec<String> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect();
    if key.trim().is_empty() || values.is_empty() {
        return Err(format!("--vary `{arg}`: expected KEY=V1,V2,…"));
    }
    Ok((key.trim().to_string(), values))
}

/// Every combination of the varied values, the first variable changing slowest.
pub fn combinations(vary: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut runs: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in vary {
        runs = runs
            .into_iter()
            .flat_map(|run| {
                values.iter().map(move |value| {
                    let mut next = run.clone();
                    next.push((key.clone(), value.clone()));
                    next
                })
            })
            .collect();
    }
    runs
}

/// A file-name-safe label of a run: `internet_delay=50ms,access_rate=5mbit`.
pub fn label(run: &[(String, String)]) -> String {
    run.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
        .replace(['/', ' '], "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_cover_the_product_in_order() {
        let vary = vec![
            parse_vary("d=0ms,50ms").unwrap(),
            parse_vary("b=5mbit, 100mbit").unwrap(),
        ];
        let runs = combinations(&vary);
        assert_eq!(runs.len(), 4);
        assert_eq!(label(&runs[0]), "d=0ms,b=5mbit");
        assert_eq!(label(&runs[1]), "d=0ms,b=100mbit");
        assert_eq!(label(&runs[3]), "d=50ms,b=100mbit");
        assert!(parse_vary("d").is_err());
        assert!(parse_vary("d=").is_err());
    }
}
