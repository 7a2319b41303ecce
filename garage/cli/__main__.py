from garage.cli import main

main()
