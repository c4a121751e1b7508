fn main() {
    println!("abm");
}
