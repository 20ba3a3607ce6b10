//! Reading a loaded pickle: the root value, a record's class, the fields
//! of a dict or an object's state, and the conversion to JSON (bounded by
//! [`Limits`]).

use super::*;

impl Pickle {
    /// The value the pickle stands for (what `pickle.load` would return).
    pub fn root(&self) -> &PyValue {
        &self.root
    }

    /// `(module, name)` of the class of a record (`None` for other values
    /// and for a record whose callable was built in the pickle).
    pub fn class_of(&self, v: &PyValue) -> Option<(&str, &str)> {
        match v {
            PyValue::Ref(i) => match &self.heap[*i] {
                Obj::Record(r) => r.class.as_ref().map(|(m, n)| (m.as_str(), n.as_str())),
                _ => None,
            },
            _ => None,
        }
    }

    /// The string-keyed fields of a dict, or of a record's state (a dict, or
    /// a `(dict, slots)` pair as Python writes objects with `__slots__`),
    /// in the pickle's order; `None` for anything else.
    pub fn fields(&self, v: &PyValue) -> Option<Vec<(&str, &PyValue)>> {
        let PyValue::Ref(i) = v else {
            return None;
        };
        let mut out = Vec::new();
        match &self.heap[*i] {
            Obj::Dict(d) => push_str_keys(d, &mut out),
            Obj::Record(r) => {
                if let Some(PyValue::Ref(s)) = &r.state {
                    match &self.heap[*s] {
                        Obj::Dict(d) => push_str_keys(d, &mut out),
                        Obj::Tuple(parts) => {
                            for part in parts {
                                if let PyValue::Ref(p) = part
                                    && let Obj::Dict(d) = &self.heap[*p]
                                {
                                    push_str_keys(d, &mut out);
                                }
                            }
                        }
                        _ => return None,
                    }
                }
                // A dict subclass: its own items.
                for (k, v) in &r.entries {
                    if let PyValue::Str(k) = k {
                        out.push((k.as_ref(), v));
                    }
                }
                if r.state.is_none() && r.entries.is_empty() {
                    return None;
                }
            }
            _ => return None,
        }
        Some(out)
    }

    /// The field `name` of a dict or record (see [`Pickle::fields`]).
    pub fn field<'a>(&'a self, v: &'a PyValue, name: &str) -> Option<&'a PyValue> {
        self.fields(v)?
            .into_iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    /// A value as JSON: lists, tuples and sets as arrays; dicts as objects
    /// (keys that are not strings written as their JSON text); bytes as
    /// `{"__bytes__": length}` (never their content); a large integer as
    /// `{"__int__": "<n-byte integer>"}`; a module-level name as
    /// `{"__global__": "module.name"}`; a record as `{"__class__":
    /// "<module>.<Class> (class not available)"}` with `args`, `kwargs`,
    /// `state`, `items`, `entries` where it has them; a value that contains
    /// itself as `{"__recursive__": true}` where it recurs. Non-finite
    /// floats are strings (`"nan"`, `"inf"`, `"-inf"`).
    ///
    /// # Errors
    /// A [`PickleError`] when nesting passes [`Limits::max_depth`] or the
    /// output passes [`Limits::max_output`] (shared values counted each
    /// time they appear).
    pub fn to_json(&self, v: &PyValue) -> Result<Value, PickleError> {
        let mut budget = self.limits.max_output;
        let mut open = vec![false; self.heap.len()];
        self.json(v, 0, &mut budget, &mut open)
    }

    fn json(
        &self,
        v: &PyValue,
        depth: usize,
        budget: &mut usize,
        open: &mut [bool],
    ) -> Result<Value, PickleError> {
        let cost = 1 + match v {
            PyValue::Str(s) => s.len(),
            _ => 0,
        };
        *budget = budget.checked_sub(cost).ok_or_else(|| {
            plain_error(format!(
                "the value is larger than {} once written out (shared parts counted each time)",
                self.limits.max_output
            ))
        })?;
        if depth > self.limits.max_depth {
            return Err(plain_error(format!(
                "values nest deeper than {} levels",
                self.limits.max_depth
            )));
        }
        Ok(match v {
            PyValue::None => Value::Null,
            PyValue::Bool(b) => Value::Bool(*b),
            PyValue::Int(n) => Value::from(*n),
            PyValue::BigInt(b) => {
                let mut o = Map::new();
                o.insert(
                    "__int__".into(),
                    Value::String(format!("<{}-byte integer>", b.len())),
                );
                Value::Object(o)
            }
            PyValue::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or_else(|| {
                    Value::String(
                        if f.is_nan() {
                            "nan"
                        } else if *f > 0.0 {
                            "inf"
                        } else {
                            "-inf"
                        }
                        .into(),
                    )
                }),
            PyValue::Str(s) => Value::String(s.to_string()),
            PyValue::Bytes(b) => {
                let mut o = Map::new();
                o.insert("__bytes__".into(), Value::from(b.len()));
                Value::Object(o)
            }
            PyValue::Global(g) => {
                let mut o = Map::new();
                o.insert(
                    "__global__".into(),
                    Value::String(format!("{}.{}", g.0, g.1)),
                );
                Value::Object(o)
            }
            PyValue::Ref(i) => {
                if open[*i] {
                    let mut o = Map::new();
                    o.insert("__recursive__".into(), Value::Bool(true));
                    return Ok(Value::Object(o));
                }
                open[*i] = true;
                let out = self.json_obj(&self.heap[*i], depth, budget, open);
                open[*i] = false;
                out?
            }
        })
    }

    fn json_obj(
        &self,
        obj: &Obj,
        depth: usize,
        budget: &mut usize,
        open: &mut [bool],
    ) -> Result<Value, PickleError> {
        let list = |items: &[PyValue], budget: &mut usize, open: &mut [bool]| {
            items
                .iter()
                .map(|x| self.json(x, depth + 1, budget, open))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        };
        let dict = |entries: &[(PyValue, PyValue)], budget: &mut usize, open: &mut [bool]| {
            let mut o = Map::new();
            for (k, v) in entries {
                let key = match k {
                    PyValue::Str(s) => s.to_string(),
                    other => match self.json(other, depth + 1, budget, open)? {
                        Value::String(s) => s,
                        j => j.to_string(),
                    },
                };
                let value = self.json(v, depth + 1, budget, open)?;
                o.insert(key, value);
            }
            Ok::<Value, PickleError>(Value::Object(o))
        };
        Ok(match obj {
            Obj::List(items) | Obj::Tuple(items) | Obj::Set(items) => list(items, budget, open)?,
            Obj::Dict(entries) => dict(entries, budget, open)?,
            Obj::Record(r) => {
                let mut o = Map::new();
                let label = match &r.class {
                    Some((m, n)) => record_label(m, n),
                    None => "(the result of a call, not available)".to_owned(),
                };
                o.insert("__class__".into(), Value::String(label));
                if !r.args.is_empty() {
                    o.insert("args".into(), list(&r.args, budget, open)?);
                }
                if let Some(k) = &r.kwargs {
                    o.insert("kwargs".into(), self.json(k, depth + 1, budget, open)?);
                }
                if let Some(s) = &r.state {
                    o.insert("state".into(), self.json(s, depth + 1, budget, open)?);
                }
                if !r.items.is_empty() {
                    o.insert("items".into(), list(&r.items, budget, open)?);
                }
                if !r.entries.is_empty() {
                    o.insert("entries".into(), dict(&r.entries, budget, open)?);
                }
                Value::Object(o)
            }
        })
    }
}

fn push_str_keys<'a>(d: &'a [(PyValue, PyValue)], out: &mut Vec<(&'a str, &'a PyValue)>) {
    for (k, v) in d {
        if let PyValue::Str(k) = k {
            out.push((k.as_ref(), v));
        }
    }
}
